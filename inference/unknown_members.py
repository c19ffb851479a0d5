"""Members the gateway does not know, in a data-plane request: forwarded as sent to an upstream speaking the
request's own format, a 400 naming them when the request would be translated.

Each ingress collects the top-level members its member table (inference.members) does not list into the
canonical body under `FORWARDED` (a name no client member can keep: a client member of that name is itself
collected). Routing (inference.routing_features) then keeps only the candidates whose provider speaks the
request's format (`NATIVE_FORMAT`: Chat Completions → `openai-chat`, Responses → `openai-responses`, Messages →
`anthropic-messages`); none left is a 400 naming the first unknown member. That provider's adapter adds them to
the upstream body as they came (`add_forwarded`), so a member an upstream adds works the day it ships and the
upstream's own 400 comes back as a provider error. A request without unknown members pays one dict lookup.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error

FORWARDED = "__forwarded_members__"
NATIVE_FORMAT = {"responses": "openai-responses", "chat-completions": "openai-chat", "messages": "anthropic-messages"}
FORMAT_NAMES = {
    "openai-responses": "OpenAI Responses",
    "openai-chat": "Chat Completions",
    "anthropic-messages": "Anthropic Messages",
}


def collect(body: dict[str, Any], out: dict[str, Any], known: Any) -> None:
    """Move the members of `body` that `known` does not hold into `out[FORWARDED]` (in order)."""
    unknown = {name: value for name, value in body.items() if name not in known}
    if unknown:
        for name in unknown:
            if body is out:
                del out[name]
        out[FORWARDED] = unknown


def forwarded(body: dict[str, Any]) -> dict[str, Any] | None:
    return body.get(FORWARDED)


def add_forwarded(upstream: dict[str, Any], body: dict[str, Any]) -> None:
    """The unknown members, as sent, into the upstream body of an adapter speaking the request's format."""
    members = body.get(FORWARDED)
    if members:
        for name, value in members.items():
            upstream.setdefault(name, value)


def routing_check(body: dict[str, Any], ingress_format: str):
    """(field, reason, predicate) keeping the candidates that speak the request's own format, or None."""
    members = body.get(FORWARDED)
    if not members:
        return None
    native = NATIVE_FORMAT.get(ingress_format)
    name = next(iter(members))
    if native is None:
        raise validation_error(name, "unknown parameter")
    reason = (
        f"unknown parameter: it is forwarded as sent only to an upstream speaking the {FORMAT_NAMES[native]} "
        f"format ({native}), and no endpoint of the requested model(s) does; other formats would need a "
        "translation the gateway does not have"
    )
    return name, reason, lambda c: c.api_format == native
