"""`filter_rules` of a destination: validation and evaluation (DECISIONS.md §5).

Shape: `{enabled (default true), groups: [{logic: "and"|"or" (default "and"), rules: [{field, operator,
value?}]}]}`. Groups combine with AND. A disabled rule set, or one without groups, lets everything through.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from gateway_project.regex import InvalidPattern, compile_pattern

STRING_FIELDS = ("model", "provider", "session_id", "user_id", "api_key_name", "finish_reason", "input", "output")
NUMBER_FIELDS = ("total_cost", "total_tokens", "prompt_tokens", "completion_tokens")
FIELDS = STRING_FIELDS + NUMBER_FIELDS
STRING_OPERATORS = ("equals", "not_equals", "contains", "not_contains", "regex", "starts_with", "ends_with")
NUMBER_OPERATORS = ("gt", "lt", "gte", "lte")
PRESENCE_OPERATORS = ("exists", "not_exists")
OPERATORS = STRING_OPERATORS + NUMBER_OPERATORS + PRESENCE_OPERATORS
MAX_GROUPS = 20
MAX_RULES = 50
MAX_VALUE_LENGTH = 1000


class FilterRulesError(ValueError):
    """An invalid rule set; `field` is the path of the offending member."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    try:
        return Decimal(str(value)) if isinstance(value, (int, float, str, Decimal)) else None
    except InvalidOperation:
        return None


def _validate_rule(rule: Any, path: str) -> dict:
    if not isinstance(rule, dict):
        raise FilterRulesError(path, "must be an object")
    unknown = set(rule) - {"field", "operator", "value"}
    if unknown:
        raise FilterRulesError(f"{path}.{sorted(unknown)[0]}", "unknown member")
    field, operator = rule.get("field"), rule.get("operator")
    if field not in FIELDS:
        raise FilterRulesError(f"{path}.field", f"must be one of {', '.join(FIELDS)}")
    if operator not in OPERATORS:
        raise FilterRulesError(f"{path}.operator", f"must be one of {', '.join(OPERATORS)}")
    value = rule.get("value")
    if operator in PRESENCE_OPERATORS:
        return {"field": field, "operator": operator}
    if value is None:
        raise FilterRulesError(f"{path}.value", f"is required for operator '{operator}'")
    if operator in NUMBER_OPERATORS:
        if _number(value) is None:
            raise FilterRulesError(f"{path}.value", f"must be a number for operator '{operator}'")
    elif operator in ("equals", "not_equals") and field in NUMBER_FIELDS:
        if _number(value) is None:
            raise FilterRulesError(f"{path}.value", f"must be a number for field '{field}'")
    elif not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH:
        raise FilterRulesError(f"{path}.value", f"must be a string of at most {MAX_VALUE_LENGTH} characters")
    if operator == "regex":
        try:
            compile_pattern(value)
        except InvalidPattern as exc:
            raise FilterRulesError(f"{path}.value", f"{exc} (RE2 syntax: no look-around or back-references)") from None
    return {"field": field, "operator": operator, "value": value}


def validate_filter_rules(rules: Any) -> dict | None:
    """The normalized rule set (defaults filled in), or raise FilterRulesError."""
    if rules is None:
        return None
    if not isinstance(rules, dict):
        raise FilterRulesError("filter_rules", "must be an object or null")
    unknown = set(rules) - {"enabled", "groups"}
    if unknown:
        raise FilterRulesError(f"filter_rules.{sorted(unknown)[0]}", "unknown member")
    enabled = rules.get("enabled", True)
    if not isinstance(enabled, bool):
        raise FilterRulesError("filter_rules.enabled", "must be a boolean")
    groups = rules.get("groups", [])
    if not isinstance(groups, list) or len(groups) > MAX_GROUPS:
        raise FilterRulesError("filter_rules.groups", f"must be an array of at most {MAX_GROUPS} groups")
    normalized = []
    for g_index, group in enumerate(groups):
        path = f"filter_rules.groups[{g_index}]"
        if not isinstance(group, dict) or set(group) - {"logic", "rules"}:
            raise FilterRulesError(path, "must be an object with `logic` and `rules`")
        logic = group.get("logic", "and")
        if logic not in ("and", "or"):
            raise FilterRulesError(f"{path}.logic", "must be 'and' or 'or'")
        rule_list = group.get("rules")
        if not isinstance(rule_list, list) or not rule_list or len(rule_list) > MAX_RULES:
            raise FilterRulesError(f"{path}.rules", f"must be an array of 1 to {MAX_RULES} rules")
        rules_out = [_validate_rule(rule, f"{path}.rules[{r_index}]") for r_index, rule in enumerate(rule_list)]
        normalized.append({"logic": logic, "rules": rules_out})
    return {"enabled": enabled, "groups": normalized}


def _present(actual: Any) -> bool:
    return actual is not None and actual != ""


def _string_test(operator: str, value: str) -> Callable[[Any], bool]:
    if operator == "regex":
        pattern = compile_pattern(value)  # RE2: linear in the text
        return lambda actual: _present(actual) and pattern.search(str(actual)) is not None
    tests: dict[str, Callable[[str], bool]] = {
        "equals": lambda a: a == value,
        "not_equals": lambda a: a != value,
        "contains": lambda a: value in a,
        "not_contains": lambda a: value not in a,
        "starts_with": lambda a: a.startswith(value),
        "ends_with": lambda a: a.endswith(value),
    }
    test = tests[operator]
    negative = operator in ("not_equals", "not_contains")
    return lambda actual: test(str(actual)) if _present(actual) else negative


def _number_test(operator: str, value: Any) -> Callable[[Any], bool]:
    bound = _number(value)
    tests: dict[str, Callable[[Decimal], bool]] = {
        "gt": lambda a: a > bound,
        "lt": lambda a: a < bound,
        "gte": lambda a: a >= bound,
        "lte": lambda a: a <= bound,
        "equals": lambda a: a == bound,
        "not_equals": lambda a: a != bound,
    }
    test = tests[operator]

    def check(actual: Any) -> bool:
        number = _number(actual)
        return test(number) if number is not None else operator == "not_equals"

    return check


def _rule_test(rule: dict) -> Callable[[dict], bool]:
    field, operator = rule["field"], rule["operator"]
    if operator == "exists":
        return lambda record: _present(record.get(field))
    if operator == "not_exists":
        return lambda record: not _present(record.get(field))
    if operator in NUMBER_OPERATORS or (field in NUMBER_FIELDS and operator in ("equals", "not_equals")):
        test = _number_test(operator, rule["value"])
    else:
        test = _string_test(operator, rule["value"])
    return lambda record: test(record.get(field))


def reads_io(rules: dict | None) -> bool:
    """Whether an enabled rule set tests the `input` or `output` text."""
    if not rules or not rules.get("enabled", True):
        return False
    return any(rule["field"] in ("input", "output") for group in rules.get("groups", []) for rule in group["rules"])


def compile_filter_rules(rules: dict | None) -> Callable[[dict], bool] | None:
    """A predicate over a filter record (see `payload.filter_record`), or None when everything passes."""
    if not rules or not rules.get("enabled", True) or not rules.get("groups"):
        return None
    groups = []
    for group in rules["groups"]:
        tests = [_rule_test(rule) for rule in group["rules"]]
        combine = all if group.get("logic", "and") == "and" else any
        groups.append((combine, tests))

    def matches(record: dict) -> bool:
        return all(combine(test(record) for test in tests) for combine, tests in groups)

    return matches
