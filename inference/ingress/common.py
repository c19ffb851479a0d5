"""Helpers shared by the ingress adapters: small validators in the client's vocabulary, the outcome of an
answer, and reading the canonical output (text, reasoning, function calls) for the wire writers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple

import msgspec
import orjson

from gateway_project.api.errors import validation_error
from inference import schema
from inference.pipeline.context import Candidate, Context, Usage
from inference.providers.base import CanonicalResult, FunctionCallDone
from inference.response import service_metadata
from inference.responses_request import declared, declared_members
from inference.schema import rule_of_type, type_error
from metering.cost import settled_cost, settled_usage

DEBUG_KEY = "inference.debug_body"  # ctx.extras: the upstream body a JSON answer echoes (debug.echo_upstream_body)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def typed(body: dict[str, Any], struct: type[msgspec.Struct], explain: Callable[[dict[str, Any]], None]) -> Any:
    """`body` converted into its format's typed request (msgspec, strict: the types, enums, bounds and lengths of
    every member). A body the type refuses gets the 400 of `explain(body)`, which runs the members' own rules
    (the member named, the API's message); msgspec's message naming the field when none refuses it."""
    try:
        return msgspec.convert(body, struct, strict=True)
    except msgspec.ValidationError as error:
        explain(body)
        raise type_error(error) from None


class Declarations(NamedTuple):
    """What a typed ingress request declares of its members (`declarations`)."""

    declared: dict[str, dict[str, Any]]  # each member's declaration (inference.responses_request), in order
    types: dict[str, Any]  # each member's type, its declaration taken off
    shared: tuple[str, ...]  # the members shared with /responses: copied as sent, explained by its rules
    handled: frozenset[str]  # the others: translated by the ingress, refused by the type with their own 400
    shared_rules: tuple[str, ...]  # the shared members whose rule checks more than their type


def declarations(struct: type[msgspec.Struct]) -> Declarations:
    """The member declarations of a typed ingress request (inference.chat_request_type, messages_request_type)."""
    members = declared_members(struct)
    shared = tuple(name for name, declaration in members.items() if declaration["shared"])
    return Declarations(
        declared=members,
        types={field.name: declared(field.type)[0] for field in msgspec.structs.fields(struct)},
        shared=shared,
        handled=frozenset(name for name, declaration in members.items() if not declaration["shared"]),
        shared_rules=tuple(name for name in shared if name in schema.RULES),
    )


def explain_steps(
    order: tuple[Any, ...],
    members: Declarations,
    *,
    translations: dict[str, Callable[[Any], Any]],
    explained_after: frozenset[str] = frozenset(),
) -> tuple[Any, ...]:
    """The steps with which an ingress explains a body its type refuses (`typed`), in the translation's `order`:
    a function (a rule between members) as it is; a member's name paired with its rule: its declared `check`,
    else its translation (`translations`, called on the value), else None for a member in `explained_after`
    (the function after it explains it), else the rule generated from its type (a Responses member's: the same
    rule). Every member the type refuses (`members.handled`: those not shared with /responses) has its step."""

    def check_of(name: str) -> Any:
        check = members.declared[name]["check"]
        if check is not None:
            return check
        if name in translations:
            translate = translations[name]
            return lambda _name, value: translate(value)
        if name in explained_after:
            return None
        return rule_of_type(members.types[name])

    named = {step for step in order if isinstance(step, str)}
    assert named == members.handled, "each member refused by the type has its 400"
    return tuple(step if callable(step) else (step, check_of(step)) for step in order)


def require_object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object")
    return value


def require_list(name: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array")
    return value


def text_parts(path: str, content: Any, allowed: tuple[str, ...] = ("text",)) -> list[dict[str, Any]]:
    """Content given as parts that may only hold text (system, developer, tool and assistant messages)."""
    parts = []
    for index, part in enumerate(require_list(path, content)):
        where = f"{path}[{index}]"
        part = require_object(where, part)
        kind = part.get("type")
        if kind not in allowed:
            raise validation_error(f"{where}.type", f"must be one of {', '.join(allowed)}")
        key = "refusal" if kind == "refusal" else "text"
        if not isinstance(part.get(key), str):
            raise validation_error(f"{where}.{key}", "must be a string")
        parts.append({"type": "input_text" if kind == "text" else "refusal", key: part[key]})
    return parts


def finish_outcome(ctx: Context, candidate: Candidate, result: CanonicalResult) -> Decimal:
    """Record a finished answer on the outcome (status, usage, cost, output) and return its cost. An answer
    without usage is charged from the estimate: `result.usage` becomes that estimate (marked), for every
    writer to show."""
    outcome = ctx.outcome
    result.usage = settled_usage(ctx, candidate, result.usage, result.output)
    cost = settled_cost(ctx, candidate, result.usage)
    outcome.status = result.status
    outcome.upstream_id = result.upstream_id
    outcome.finish_reason = result.finish_reason
    outcome.usage = result.usage
    outcome.cost = cost
    outcome.output = result.output
    outcome.output_text = result.text
    outcome.tool_calls = sum(1 for item in result.output if item.get("type") == "function_call")
    return cost


def mark_first_byte(ctx: Context) -> None:
    ctx.outcome.first_byte_sent = True
    ctx.outcome.ttft_ms = int((time.perf_counter() - ctx.started) * 1000)


def reasoning_text(output: list[dict[str, Any]]) -> str:
    """The reasoning an upstream returned (reasoning items: their text content, else their summary)."""
    texts = []
    for item in output:
        if item.get("type") != "reasoning":
            continue
        parts = item.get("content") or item.get("summary") or []
        texts.extend(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return "".join(texts)


def function_calls(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in output if item.get("type") == "function_call"]


def refusal_text(output: list[dict[str, Any]]) -> str | None:
    refusals = [
        p.get("refusal", "")
        for item in output
        if item.get("type") == "message"
        for p in item.get("content", [])
        if p.get("type") == "refusal"
    ]
    return "".join(refusals) or None


@dataclass(slots=True)
class LoopAnswer:
    """What the server-tool loop answers (inference.servertools.loop), for every ingress to render: the output
    items of all turns (server-tool items, messages with their `url_citation` annotations, client function
    calls), the summed usage and cost, and the last turn's result, candidate and credential kind."""

    output: list[dict[str, Any]]
    usage: Usage
    cost: Decimal
    result: CanonicalResult
    candidate: Candidate
    is_byok: bool


SERVER_TOOL_USAGE = {"service:web_search": "web_search_requests", "service:web_fetch": "web_fetch_requests"}


def server_tool_usage(kinds: list[str]) -> dict[str, int]:
    """`usage.server_tool_use` (Anthropic's shape, also on chat completions): the searches and fetches run."""
    counts = dict.fromkeys(SERVER_TOOL_USAGE.values(), 0)
    for kind in kinds:
        if kind in SERVER_TOOL_USAGE:
            counts[SERVER_TOOL_USAGE[kind]] += 1
    return counts


def message_texts(output: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(text, annotations) of each message item with text, in order."""
    found = []
    for item in output:
        if item.get("type") != "message":
            continue
        parts = [p for p in item.get("content") or () if p.get("type") == "output_text"]
        text = "".join(p.get("text", "") for p in parts)
        if text:
            found.append((text, [a for p in parts for a in p.get("annotations") or ()]))
    return found


def record_streamed_output(ctx: Context, text: str, calls: list[dict[str, Any]]) -> None:
    """The outcome's output (Generation record, observability) of a loop streamed in a non-Responses format:
    the text the client got and its client function calls, as Responses items."""
    from inference.response import message_item, new_item_id

    output = [message_item(new_item_id("msg"), text)] if text else []
    output.extend(calls)
    ctx.outcome.output = output
    ctx.outcome.output_text = text


# A format's `usage` object of an answer: (usage, cost, is_byok) -> the JSON object.
UsageObject = Callable[[Usage, Decimal, bool], dict[str, Any]]


def answer_json(ctx: Context, payload: dict[str, Any], usage: dict[str, Any]) -> bytes:
    """The end of a JSON answer in any client format: its `usage`, `service_metadata` when asked for, the first
    byte marked, the body serialized."""
    payload["usage"] = usage
    if ctx.metadata_enabled:
        payload["service_metadata"] = service_metadata(ctx)
    debug = ctx.extras.get(DEBUG_KEY)
    if debug is not None:  # debug.echo_upstream_body on a JSON answer
        payload["debug"] = {"echo_upstream_body": debug}
    mark_first_byte(ctx)
    return orjson.dumps(payload)


def loop_usage(usage_object: UsageObject, usage: Usage, cost: Decimal, is_byok: bool, kinds: list[str]) -> dict:
    """A server-tool loop's `usage` in the client's format, with `server_tool_use` (the searches and fetches)."""
    return {**usage_object(usage, cost, is_byok), "server_tool_use": server_tool_usage(kinds)}


def loop_json(ctx: Context, payload: dict[str, Any], answer: LoopAnswer, usage_object: UsageObject) -> bytes:
    """The end of a server-tool loop's JSON answer in any format (its usage has `server_tool_use`)."""
    kinds = [item.get("type", "") for item in answer.output]
    return answer_json(ctx, payload, loop_usage(usage_object, answer.usage, answer.cost, answer.is_byok, kinds))


class LoopStreamState:
    """What a server-tool loop's stream keeps in any format (a mixin before the format's stream class): the
    sources the text may cite, the kinds of the server-tool calls run, and the client function calls streamed,
    recorded with the text as the outcome's output (`record_output`) when the stream ends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sources: dict[str, str] = {}
        self.kinds: list[str] = []  # the server-tool calls run, by kind
        self.call_items: list[dict[str, Any]] = []  # the client function calls streamed

    async def handle(self, event: Any) -> bool:
        if isinstance(event, FunctionCallDone):
            self.call_items.append(
                {"type": "function_call", "call_id": event.call_id, "name": event.name, "arguments": event.arguments}
            )
        return await super().handle(event)

    def record_output(self, text: str) -> None:
        record_streamed_output(self.ctx, text, self.call_items)
