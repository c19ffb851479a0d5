"""Upstream failures → `ProviderError` of a kind routing acts on (see docs/providers.md for the table).

Status mapping (`error_for_status`): 429 RATE_LIMITED (with `retry_after` from `Retry-After` or
`retry-after-ms`); 529, and 503 whose body says overloaded, OVERLOADED; 408/504/524 TIMEOUT;
400/404/413/422 and other 4xx BAD_REQUEST; 401/402/403 AUTH; other 5xx SERVER. Transport failures
(`error_for_exception`): timeouts TIMEOUT, everything else (refused, reset, cut short) SERVER. Malformed
bodies are SERVER, marked `maybe_billed`: a body is read only from a 2xx answer, so the provider did the work
and may bill it (`malformed`). Errors inside a 200 body or a stream (`body_error`) map by their type/code and
are not marked: the provider itself says the request failed. The credential of the call never appears in a
message or `raw` (`scrub`).
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import aiohttp
import orjson

from inference.providers.base import ProviderError, ProviderErrorKind

RAW_LIMIT = 2000  # characters of a non-JSON error body kept in `raw`
MAX_RETRY_AFTER = 60.0  # seconds: an upstream's longer (or absurd) Retry-After is cut to this before it is used
# Refusals that concern this endpoint only (another provider or model may take the same request): the model
# is unknown there (404), the body is too large for it (413), it cannot process it (422), or the prompt does
# not fit its context window.
ENDPOINT_SPECIFIC_STATUSES = frozenset({404, 413, 422})
CONTEXT_LENGTH_MARKERS = ("context_length", "context length", "context window", "prompt is too long", "too many tokens")


def scrub(value: Any, secret: str) -> Any:
    """`value` with every occurrence of `secret` replaced (strings, inside dicts and lists)."""
    if not secret or len(secret) < 4:
        return value
    if isinstance(value, str):
        return value.replace(secret, "***")
    if isinstance(value, dict):
        return {k: scrub(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secret) for v in value]
    return value


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date, at most
    MAX_RETRY_AFTER."""
    value = _retry_after(headers)
    return None if value is None else min(value, MAX_RETRY_AFTER)


def _retry_after(headers: Any) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def decode_error_body(data: bytes, secret: str) -> Any:
    """The upstream's error body as JSON when it is JSON, else its text (cut), credential removed."""
    try:
        raw: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        raw = data[:RAW_LIMIT].decode("utf-8", "replace")
    return scrub(raw, secret)


def error_message(raw: Any) -> str:
    """The human message inside an OpenAI- or Anthropic-style error body."""
    if isinstance(raw, dict):
        error = raw.get("error", raw)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(raw.get("message"), str):
            return raw["message"]
    return raw[:300] if isinstance(raw, str) else ""


def kind_for_status(status: int, raw: Any) -> ProviderErrorKind:
    if status == 429:
        return ProviderErrorKind.RATE_LIMITED
    if status == 529 or (status == 503 and "overload" in str(raw).lower()):
        return ProviderErrorKind.OVERLOADED
    if status in (408, 504, 524):
        return ProviderErrorKind.TIMEOUT
    if status in (401, 402, 403):
        return ProviderErrorKind.AUTH
    if 400 <= status < 500:
        return ProviderErrorKind.BAD_REQUEST
    return ProviderErrorKind.SERVER


def error_for_status(status: int, data: bytes, headers: Any, secret: str) -> ProviderError:
    raw = decode_error_body(data, secret)
    kind = kind_for_status(status, raw)
    message = error_message(raw) or f"HTTP {status}"
    retry_after = parse_retry_after(headers) if kind is ProviderErrorKind.RATE_LIMITED else None
    error = ProviderError(
        kind, f"upstream returned {status}: {message}", status=status, raw=raw, retry_after=retry_after
    )
    error.endpoint_specific = is_endpoint_specific(kind, status, raw)
    # 524: the provider's edge (Cloudflare) gave up waiting for an origin that had the request and was working
    error.maybe_billed = status == 524
    return error


def is_endpoint_specific(kind: ProviderErrorKind, status: Any, raw: Any) -> bool:
    """A refusal another endpoint may not share (see ENDPOINT_SPECIFIC_STATUSES)."""
    if kind is not ProviderErrorKind.BAD_REQUEST:
        return False
    if status in ENDPOINT_SPECIFIC_STATUSES:
        return True
    text = str(raw).lower()
    return any(marker in text for marker in CONTEXT_LENGTH_MARKERS)


def error_for_exception(exc: BaseException, secret: str) -> ProviderError:
    """A transport-level failure (connect, timeout, broken body) as a ProviderError."""
    if isinstance(exc, TimeoutError):
        return ProviderError(ProviderErrorKind.TIMEOUT, "upstream timed out", raw=None)
    detail = scrub(str(exc), secret) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, unknown host, TLS handshake, the proxy
        return ProviderError(ProviderErrorKind.SERVER, f"cannot connect to upstream: {detail}")
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # the proxy refused the tunnel (407, 403, 502...)
        return ProviderError(ProviderErrorKind.SERVER, f"cannot connect to upstream: the proxy answered {detail}")
    if isinstance(exc, aiohttp.ClientPayloadError):  # the body broke off, or is not valid chunked or compressed data
        return ProviderError(ProviderErrorKind.SERVER, f"upstream response cut short: {detail}")
    return ProviderError(ProviderErrorKind.SERVER, f"upstream connection failed: {detail}")


def malformed(what: str, raw: Any = None) -> ProviderError:
    """A 2xx answer the gateway cannot read (not JSON, a wrong shape, a stream that breaks off): the provider
    answered success, so it may bill the request; marked `maybe_billed` (charged its hold, not re-sent)."""
    error = ProviderError(ProviderErrorKind.SERVER, f"malformed upstream {what}", raw=raw)
    error.maybe_billed = True
    return error


def loads(data: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data if isinstance(data, str) else data[:RAW_LIMIT].decode("utf-8", "replace")
        raise malformed(what, raw=text[:RAW_LIMIT])


# --- errors inside a body or a stream -----------------------------------------------------------------------

_CODE_KINDS = {
    "rate_limit": ProviderErrorKind.RATE_LIMITED,
    "overloaded": ProviderErrorKind.OVERLOADED,
    "timeout": ProviderErrorKind.TIMEOUT,
    "authentication": ProviderErrorKind.AUTH,
    "permission": ProviderErrorKind.AUTH,
    "invalid_api_key": ProviderErrorKind.AUTH,
    "invalid_request": ProviderErrorKind.BAD_REQUEST,
    "not_found": ProviderErrorKind.BAD_REQUEST,
    "context_length": ProviderErrorKind.BAD_REQUEST,
    "request_too_large": ProviderErrorKind.BAD_REQUEST,
}


def kind_for_code(code: Any, status: Any = None) -> ProviderErrorKind:
    """The kind of an error named by a code/type string (`rate_limit_exceeded`, `overloaded_error`, ...)."""
    text = str(code or "").lower()
    for marker, kind in _CODE_KINDS.items():
        if marker in text:
            return kind
    if isinstance(status, int):
        return kind_for_status(status, text)
    return ProviderErrorKind.SERVER


def body_error(error: Any, raw: Any) -> ProviderError:
    """An error object that came inside a 200 body or as a stream event."""
    if isinstance(error, dict):
        code = error.get("type") or error.get("code")
        message = error.get("message") or str(code or "error")
        status = error.get("code") if isinstance(error.get("code"), int) else None
        kind = kind_for_code(code if isinstance(code, str) else "", status)
        result = ProviderError(kind, f"upstream error: {message}", status=status, raw=raw)
        result.endpoint_specific = is_endpoint_specific(kind, status, error)
        return result
    return ProviderError(ProviderErrorKind.SERVER, f"upstream error: {error}", raw=raw)
