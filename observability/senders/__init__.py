"""Wire formats of the destination types: each sender turns a trace snapshot into one HTTP request.

`build_request(type, trace, config, delivery_id)` returns an `OutgoingRequest`, or raises
`DeliveryNotSupported` for the type without a sender (ramp). Senders are pure functions;
the worker does the HTTP call.
"""

from __future__ import annotations

from observability.senders import datadog, langfuse, otlp, plain, s3, snowflake, webhook
from observability.senders.base import DeliveryNotSupported, OutgoingRequest

BUILDERS = {
    "webhook": webhook.build,
    "langfuse": langfuse.build,
    "datadog": datadog.build,
    "posthog": plain.build_posthog,
    "clickhouse": plain.build_clickhouse,
    "s3": s3.build,
    "snowflake": snowflake.build,
    **{name: otlp.build_for(name) for name in otlp.OTLP_TYPES},
}
CHECKERS = {"langfuse": langfuse.check_response}
UNSUPPORTED_TYPES = ("ramp",)
DELIVERING_TYPES = tuple(sorted(BUILDERS))


def build_request(type_: str, trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    builder = BUILDERS.get(type_)
    if builder is None:
        raise DeliveryNotSupported(f"delivery not supported for type {type_}")
    request = builder(trace, config, delivery_id)
    request.headers.update(config.get("headers") or {})
    return request


def response_problem(type_: str, status: int, body: bytes) -> str | None:
    """A delivery failure hidden in a successful response (Langfuse answers 207 with per-event errors)."""
    checker = CHECKERS.get(type_)
    return checker(status, body) if checker else None


__all__ = ["DELIVERING_TYPES", "UNSUPPORTED_TYPES", "DeliveryNotSupported", "OutgoingRequest", "build_request"]
