"""The effects the member registry (tests/contract/member_matrix.py) asserts, and what a request produced
(`Seen`): helpers that read the upstream body, the answer, the chosen provider and the Generation row."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RESP, CHAT, CLAUDE = "openai-responses", "openai-chat", "anthropic-messages"
FORMATS = (RESP, CHAT, CLAUDE)
MODEL = {RESP: "fakeai/agent", CHAT: "fakechat/agent", CLAUDE: "fakeclaude/agent"}
UPSTREAM = {RESP: "up-agent", CHAT: "up-chat-agent", CLAUDE: "up-claude"}
SHORT = {RESP: "r", CHAT: "c", CLAUDE: "a"}
DELETE = object()  # a fragment value that removes the member from the base body


@dataclass
class Seen:
    """What one request produced: its answer, what the upstream received, the request's Generation row."""

    status: int
    answer: Any  # the JSON answer (None for a stream)
    text: str  # the raw answer (a stream's events)
    headers: dict
    sent: list[dict]  # the upstream request bodies, in order
    row: Any  # the Generation row (None when there is none)
    fmt: str

    @property
    def last(self) -> dict:
        return self.sent[-1] if self.sent else {}


@dataclass(frozen=True)
class Effect:
    says: str
    holds: Callable[[Seen], bool]
    needs_row: bool = False


def path(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _safe(check: Callable[[Seen], bool]) -> Callable[[Seen], bool]:
    def holds(seen: Seen) -> bool:
        try:
            return bool(check(seen))
        except (KeyError, IndexError, TypeError, ValueError):
            return False

    return holds


def sent(dotted: str, value: Any) -> Effect:
    """The upstream received `value` at `dotted`."""
    return Effect(f"upstream {dotted} == {value!r}", _safe(lambda s: s.status == 200 and path(s.last, dotted) == value))


def carries(key: str, needle: str) -> Effect:
    """The upstream's `key` carries the text `needle`."""
    return Effect(f"upstream {key} carries {needle!r}", _safe(lambda s: needle in json.dumps(s.last[key])))


def omitted(name: str) -> Effect:
    """Left out for this format, and the answer says so (a router parameter its format has no member for)."""
    return Effect(
        f"{name} left out and reported",
        _safe(
            lambda s: s.status == 200
            and name not in s.last
            and name in s.headers.get("x-service-omitted-parameters", "").split(", ")
        ),
    )


def refused(named: str) -> Effect:
    """400 naming the member, the upstream never called."""
    return Effect(
        f"400 naming {named}",
        _safe(lambda s: s.status == 400 and named in json.dumps(s.answer["error"]) and not s.sent),
    )


def answered(dotted: str, value: Any) -> Effect:
    """The client's JSON answer has `value` at `dotted`."""
    return Effect(f"answer {dotted} == {value!r}", _safe(lambda s: s.status == 200 and path(s.answer, dotted) == value))


def row(attribute: str, value: Any) -> Effect:
    """The request's Generation row records `value`."""
    return Effect(f"row.{attribute} == {value!r}", _safe(lambda s: getattr(s.row, attribute) == value), needs_row=True)


def chose(provider: str) -> Effect:
    """Routing chose `provider` (its upstream model `<provider>-up`, and the row says so)."""
    return Effect(
        f"provider {provider} chosen",
        _safe(lambda s: s.status == 200 and s.last["model"] == f"{provider}-up" and s.row.provider == provider),
        needs_row=True,
    )


def calls(count: int) -> Effect:
    return Effect(f"{count} upstream call(s)", lambda s: s.status == 200 and len(s.sent) == count)


def both(*effects: Effect) -> Effect:
    return Effect(
        " and ".join(e.says for e in effects),
        lambda s: all(e.holds(s) for e in effects),
        needs_row=any(e.needs_row for e in effects),
    )


def check(says: str, holds: Callable[[Seen], bool], needs_row: bool = False) -> Effect:
    return Effect(says, _safe(holds), needs_row)


@dataclass(frozen=True)
class Entry:
    """A member's request fragment (`{fmt}` in a string value is the provider format's short name, `{model}` its
    catalog model) and its effect on each provider format it can reach. `stream`: the fragment asks for a stream.
    `routing`: the request goes to the routing catalog's models (tests/contract/test_member_matrix.py)."""

    fragment: dict
    effects: dict[str, Effect]
    stream: bool = False
    script: str = ""  # a scripted upstream conversation (`search-then-answer`)
    headers: dict = field(default_factory=dict)


def every(effect: Effect | Callable[[str], Effect]) -> dict[str, Effect]:
    return {fmt: effect(fmt) if callable(effect) and not isinstance(effect, Effect) else effect for fmt in FORMATS}


def per(responses: Effect, chat: Effect, claude: Effect) -> dict[str, Effect]:
    return {RESP: responses, CHAT: chat, CLAUDE: claude}


TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Find a thing",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CHAT_TOOL = {"type": "function", "function": {k: v for k, v in TOOL.items() if k != "type"}}
CLAUDE_TOOL = {"name": "lookup", "description": "Find a thing", "input_schema": TOOL["parameters"]}
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
SEARCH = {"type": "service:web_search"}


def sampling(name: str, value: Any, carried_by: tuple[str, ...], claude_name: str | None = None) -> dict:
    """A router parameter: sent to the formats that carry it (the agent endpoints declare no supported parameters
    list: every parameter is supported), left out and reported for the others."""
    effects = {}
    for fmt in FORMATS:
        if fmt in carried_by:
            effects[fmt] = sent(claude_name if fmt == CLAUDE and claude_name else name, value)
        else:
            effects[fmt] = omitted(name)
    return effects


def kept_or_refused(name: str, value: Any) -> Effect:
    """Honoured (sent as given) or a 400 naming it: never accepted and dropped (issue 37's rule)."""
    honoured, refusal = sent(name, value), refused(name)
    return Effect(f"{name} sent or 400 naming it", lambda s: honoured.holds(s) or refusal.holds(s))


def sticky_key(name: str) -> Effect:
    """A provider that takes no such member: answered, the member not sent, and the gateway keeps the key's
    conversation on one endpoint (shown with two endpoints by tests/inference/test_member_fidelity.py)."""
    from inference import routing

    def holds(seen: Seen) -> bool:
        keys = {key for _, key in routing._sticky}
        return seen.status == 200 and name not in (seen.last or {}) and f"{name}:k1" in keys

    return check(f"{name} keeps the conversation on its endpoint, not sent", holds)


def ends_with_usage(seen: Seen) -> bool:
    final = [line for line in seen.text.splitlines() if line.startswith("data: {")][-1]
    return seen.status == 200 and '"usage"' in final


def identity(name: str) -> dict[str, Effect]:
    hidden = check(
        f"{name} hashed, never sent as given", lambda s: s.status == 200 and "customer-42" not in str(s.last)
    )
    return every(hidden)


def mentions(needle: str) -> Effect:
    """The upstream request carries the text `needle` (wherever its format puts it)."""
    return Effect(f"upstream carries {needle!r}", _safe(lambda s: s.status == 200 and needle in json.dumps(s.last)))
