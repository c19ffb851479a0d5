"""Validation of the Responses request body (spec "Responses request body", DECISIONS.md §9) through its type,
`inference.responses_request.ResponsesRequest`.

A valid body costs one `msgspec.convert` (types, enums, bounds and lengths, in C) and the rules the type cannot
state for the members flagged `rule` (items of `input` and `tools`, plugins, ...). An invalid one is explained
by each member's rule, in body order: the member's `check` when it declares one, otherwise a rule derived from
its type (`rule_of_type`: scalars, enums and bounds, and object types from their fields with the messages the
types declare), so every failure is a 400 naming the (nested) field (`validation_error`). `CHECKERS` holds those rules
by member for the other ingresses, which validate the members they share with /responses the same way.
`parse_body` decodes with orjson and applies the limits of every JSON body (nesting depth, no NUL character:
gateway_project/json_input.py).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.json_input import check_json, needs_scan
from inference import schema_parts as parts
from inference.member_kinds import Member
from inference.responses_request import REFUSED_MEMBERS, ResponsesRequest, declared
from inference.responses_request_parts import CacheControl
from inference.schema_router import fold_router_members
from inference.schema_rules import MAX_IDENTIFIER, MAX_TOOL_CALLS
from inference.unknown_members import collect

__all__ = [
    "CHECKERS",
    "MAX_IDENTIFIER",
    "MAX_TOOL_CALLS",
    "MEMBERS",
    "RULES",
    "parse_body",
    "type_error",
    "validate_body",
]

Checker = Callable[[str, Any], None]


def parse_body(raw: bytes, forward_unknown: bool = False) -> dict[str, Any]:
    """Decode and validate a request body; 400 for malformed JSON or any invalid field. `forward_unknown` (the
    /responses data plane): members the API does not define are collected for a same-format upstream
    (inference.unknown_members) instead of refused."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"Malformed JSON body: {exc}") from None
    if needs_scan(raw):
        check_json(body)
    return validate_body(body, forward_unknown)


def validate_body(body: Any, forward_unknown: bool = False) -> dict[str, Any]:
    """Validate a decoded Responses body in place and return it (strict: an unknown member is a 400, unless
    `forward_unknown`)."""
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    if NAMES.issuperset(body):
        try:
            msgspec.convert(body, ResponsesRequest, strict=True)
        except msgspec.ValidationError as error:
            _explain(body, error)
        for name, value in body.items():
            rule = RULES.get(name)
            if rule is not None:
                rule(name, value)
    else:
        _unknown_members(body, forward_unknown)
        collect(body, body, CHECKERS)
    tools = body.get("tools")
    if tools:
        parts.check_deferred_tools(tools)
        parts.hosted_web_search(tools)
    return fold_router_members(body)


def _unknown_members(body: dict[str, Any], forward_unknown: bool) -> None:
    """A body with members the type does not have: each known member checked by its rule, in body order; a member
    of another format refused with its reason; any other refused unless `forward_unknown`."""
    for name, value in body.items():
        checker = CHECKERS.get(name)
        if checker is not None:
            checker(name, value)
        elif name in REFUSED_MEMBERS:
            raise validation_error(name, f"is not supported: {REFUSED_MEMBERS[name]}")
        elif not forward_unknown:
            raise validation_error(name, "unknown parameter")


def _explain(body: dict[str, Any], error: msgspec.ValidationError) -> None:
    """The 400 of the first member, in body order, whose rule refuses it (the type refused one of them)."""
    for name, value in body.items():
        checker = CHECKERS.get(name)
        if checker is not None:
            checker(name, value)
    raise type_error(error)


def type_error(error: msgspec.ValidationError) -> GatewayError:
    """msgspec's own message as a 400 naming the field (a refusal no member rule explains)."""
    message, _, path = str(error).rpartition(" - at `$")
    return validation_error(path.rstrip("`").lstrip(".") or "body", message[:1].lower() + message[1:])


# Rules derived from a member's type, with the messages the API has always given.


def _unwrap(tp: Any) -> tuple[Any, msgspec.Meta | None]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *metas = typing.get_args(tp)
        return base, next((m for m in metas if isinstance(m, msgspec.Meta)), None)
    return tp, None


def _parts(tp: Any) -> tuple[list[Any], bool]:
    """The options of a type without null and without `UNSET` (an absent member), and whether null is one."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        return [a for a in args if a not in (type(None), msgspec.UnsetType)], type(None) in args
    return [tp], False


MISSING = object()  # a required member of an object that is absent


def _declared_error(option: Any) -> str | None:
    """A member's own 400 message, declared on its type (`Meta(extra={"error": ...})`)."""
    if typing.get_origin(option) is typing.Annotated:
        for meta in typing.get_args(option)[1:]:
            if isinstance(meta, msgspec.Meta) and meta.extra and "error" in meta.extra:
                return meta.extra["error"]
    return None


def _declared_rule(option: Any, nullable: bool, message: str) -> Checker:
    """The message a type declares, for any value the type refuses (msgspec decides) or a required one absent."""
    target = option | None if nullable else option

    def check(name: str, value: Any) -> None:
        if value is MISSING:
            raise validation_error(name, message)
        try:
            msgspec.convert(value, target, strict=True)
        except msgspec.ValidationError:
            raise validation_error(name, message) from None

    return check


def _dict_rule(value_type: Any, nullable: bool) -> Checker:
    """An object whose values declare their message: each value at `name.key` by its type's rule."""
    value_rule = rule_of_type(value_type)

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            raise validation_error(name, "must be an object")
        for key, item in value.items():
            value_rule(f"{name}.{key}", item)

    return check


def _list_rule(item: Any, nullable: bool, message: str | None) -> Checker:
    """An array (`message`, the one its type declares, when it is not one), each item by its type's rule."""
    item_rule = rule_of_type(item)
    not_array = message or "must be an array"

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, list):
            raise validation_error(name, not_array)
        for index, entry in enumerate(value):
            item_rule(f"{name}[{index}]", entry)

    return check


def _struct_rule(struct: type[msgspec.Struct], nullable: bool) -> Checker:
    """The rule of an object type (a msgspec Struct), generated from its fields: an object; each member by its
    field's rule, in the type's order, a required one when absent too; with `forbid_unknown_fields`, the members
    in body order and one the type does not have refused with the type's `unknown_member` message."""
    fields = msgspec.structs.fields(struct)
    rules = {field.name: rule_of_type(field.type) for field in fields}
    required = frozenset(field.name for field in fields if field.required)
    forbid = struct.__struct_config__.forbid_unknown_fields
    unknown = getattr(struct, "unknown_member", "unknown parameter")

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            raise validation_error(name, "must be an object")
        if forbid:
            for key, item in value.items():
                rule = rules.get(key)
                if rule is None:
                    raise validation_error(f"{name}.{key}", unknown)
                rule(f"{name}.{key}", item)
            return
        for key, rule in rules.items():
            if key in value:
                rule(f"{name}.{key}", value[key])
            elif key in required:
                rule(f"{name}.{key}", MISSING)

    return check


def _number_rule(kind: type, meta: msgspec.Meta | None, nullable: bool) -> Checker:
    low, high = (meta.ge, meta.le) if meta else (None, None)
    integer = kind is int

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
            raise validation_error(name, "must be an integer" if integer else "must be a number")
        if not integer and ((low is not None and value < low) or (high is not None and value > high)):
            raise validation_error(name, f"must be between {low} and {high}")
        if integer and low is not None and value < low:
            raise validation_error(name, f"must be at least {low}")
        if integer and high is not None and value > high:
            raise validation_error(name, f"must be at most {high}")

    return check


def _scalar_rule(kind: Any, meta: msgspec.Meta | None, nullable: bool) -> Checker:
    if typing.get_origin(kind) is typing.Literal:
        values = frozenset(typing.get_args(kind))
        allowed = parts.allowed_values(values)

        def check_enum(name: str, value: Any) -> None:
            if not (value is None and nullable) and not parts.is_one_of(value, values):
                raise validation_error(name, f"must be one of {allowed}")

        return check_enum
    if kind in (int, float):
        return _number_rule(kind, meta, nullable)
    expected, message = {bool: (bool, "must be a boolean"), str: (str, "must be a string")}.get(
        typing.get_origin(kind) or kind, (dict, "must be an object")
    )
    longest = meta.max_length if meta else None

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, expected):
            raise validation_error(name, message)
        if longest is not None and len(value) > longest:
            raise validation_error(name, f"must be at most {longest} characters")

    return check


def number_between(low: float, high: float) -> Checker:
    """The rule of a nullable number in [low, high] (Anthropic's temperature range: inference.ingress)."""
    return _number_rule(float, msgspec.Meta(ge=low, le=high), nullable=True)


def rule_of_type(tp: Any) -> Checker:
    """The checker a member's type stands for: a number or integer with its bounds, a boolean, a string with
    its length, one of an enum, an object, an array with its items' rule, an object type with the rules of its
    members, an object whose values declare their message (each nullable when the type allows null); a type
    declaring its message (`Meta(extra={"error": ...})`) refuses what msgspec refuses with that message (an
    array: when not one)."""
    options, nullable = _parts(tp)
    (option,) = options
    kind, meta = _unwrap(option)
    message = _declared_error(option)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return _struct_rule(kind, nullable)
    if typing.get_origin(kind) is list:
        return _list_rule(typing.get_args(kind)[0], nullable, message)
    if typing.get_origin(kind) is dict and _declared_error(typing.get_args(kind)[1]) is not None:
        return _dict_rule(typing.get_args(kind)[1], nullable)
    if message is not None:
        return _declared_rule(option, nullable, message)
    return _scalar_rule(kind, meta, nullable)


def _fields() -> tuple[dict[str, Checker], dict[str, Checker], dict[str, Member]]:
    checkers, rules, members = {}, {}, {}
    for field in msgspec.structs.fields(ResponsesRequest):
        tp, extra = declared(field.type)
        checkers[field.name] = extra["check"] or rule_of_type(tp)
        if extra["rule"]:
            rules[field.name] = checkers[field.name]
        members[field.name] = extra["member"]
    return checkers, rules, members


CHECKERS, RULES, MEMBERS = _fields()
NAMES = frozenset(CHECKERS)
CACHE_CONTROL = rule_of_type(CacheControl)  # a `cache_control` nested in a content part (not nullable there)
