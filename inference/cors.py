"""CORS for browser clients of the data plane (GATEWAY_CORS_ALLOWED_ORIGINS; none by default).

A request whose `Origin` is allowed gets `Access-Control-Allow-Origin` (the origin itself, or `*` when
the setting is `*`), `Vary: Origin` and the exposed `x-request-id`, `retry-after` and `x-service-cache` (the
response cache's HIT/MISS); a preflight `OPTIONS` from an allowed origin is answered 204 with the allowed method
(POST), the requested headers and `Access-Control-Max-Age`. Other origins get no CORS header, so the browser
refuses the answer. Requests without `Origin` (every server-side client) get no CORS header.

Once CORS is configured every answer depends on the request's origin (whether it is sent, and which), so every
answer, whatever the origin, the method or the status, carries `Vary: Origin`: a shared cache then never
hands one origin's answer (with or without its CORS headers) to another. Without CORS configured no answer
depends on the origin and none carries it.
"""

from __future__ import annotations

from django.conf import settings

MAX_AGE = b"600"


def _allowed(origin: str) -> bytes | None:
    allowed = settings.GATEWAY_CORS_ALLOWED_ORIGINS
    if not allowed or not origin:
        return None
    if "*" in allowed:
        return b"*"
    return origin.encode("latin-1") if origin.rstrip("/") in allowed else None


VARY = (b"vary", b"Origin")


def cors_headers(origin: str | None) -> list[tuple[bytes, bytes]]:
    """The headers added to an answer for a request from `origin` (None: no `Origin` header): `Vary: Origin`
    alone when CORS is configured but the origin is not allowed (or absent), nothing when CORS is off."""
    if not settings.GATEWAY_CORS_ALLOWED_ORIGINS:
        return []
    value = _allowed(origin or "")
    if value is None:
        return [VARY]
    return [
        (b"access-control-allow-origin", value),
        VARY,
        (b"access-control-expose-headers", b"x-request-id, retry-after, x-service-cache, x-service-omitted-parameters"),
    ]


def preflight_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """The headers of the 204 answer to a preflight OPTIONS besides `cors_headers` (which the responder adds):
    only `Allow` when the origin is not allowed."""
    allow = [(b"allow", b"POST, OPTIONS")]
    if _allowed(headers.get("origin") or "") is None:
        return allow
    requested = headers.get("access-control-request-headers") or "authorization, content-type"
    return [
        *allow,
        (b"access-control-allow-methods", b"POST, OPTIONS"),
        (b"access-control-allow-headers", requested.encode("latin-1")),
        (b"access-control-max-age", MAX_AGE),
    ]
