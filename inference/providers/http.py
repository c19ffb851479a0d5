"""The thin shared send of the HTTP adapters: one pooled aiohttp session per event loop, time limits,
server-sent events, and the mapping of every upstream failure to a `ProviderErrorKind`.

Time limits (`Timeouts` of the call): `connect` for the TCP connect; `first_byte` from the send until the
response head and, for a stream, its first event; `read` for the whole JSON body after the head, and
between two reads of a stream. Any of them running out is `TIMEOUT`.

Status mapping (`error_for_status`): 429 RATE_LIMITED (with `retry_after` from `Retry-After` or
`retry-after-ms`); 529, and 503 whose body says overloaded, OVERLOADED; 408/504/524 TIMEOUT;
400/404/413/422 and other 4xx BAD_REQUEST; 401/402/403 AUTH; other 5xx SERVER. Connection failures,
malformed bodies and streams that end before completion are SERVER. The credential of the call never
appears in an error's message or `raw`.

Adapters subclass `HttpAdapter` and provide the pure parts: `build_request`, `parse_response` (JSON →
`CanonicalResult`) and `stream_parser()` (SSE events → canonical events, then the result).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any, Protocol

import aiohttp
import orjson

from inference.providers.base import (
    Adapter,
    CanonicalEvent,
    CanonicalResult,
    ProviderError,
    ProviderErrorKind,
    StreamDone,
    Timeouts,
    UpstreamCall,
    UpstreamRequest,
)
from inference.providers.sse import ServerSentEvent, SSEDecoder

RAW_LIMIT = 2000  # characters of a non-JSON error body kept in `raw`

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = weakref.WeakKeyDictionary()


def get_session() -> aiohttp.ClientSession:
    """The long-lived pooled client session of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        connector = aiohttp.TCPConnector(limit=1000, limit_per_host=0, keepalive_timeout=60, ttl_dns_cache=300)
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            trust_env=False,  # never through an environment proxy: upstream hosts come from the catalog only
            skip_auto_headers=("User-Agent",),
        )
        _sessions[loop] = session
    return session


async def close_session() -> None:
    """Close the running loop's session (at shutdown, or at the end of a test's event loop)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()


@functools.lru_cache(maxsize=64)
def _client_timeout(timeouts: Timeouts) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(
        total=None, connect=timeouts.connect, sock_connect=timeouts.connect, sock_read=timeouts.read
    )


# --- error mapping ------------------------------------------------------------------------------------------


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
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
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
    return ProviderError(
        kind, f"upstream returned {status}: {message}", status=status, raw=raw, retry_after=retry_after
    )


def error_for_exception(exc: BaseException, secret: str) -> ProviderError:
    """A transport-level failure (connect, timeout, broken body) as a ProviderError."""
    if isinstance(exc, TimeoutError):
        return ProviderError(ProviderErrorKind.TIMEOUT, "upstream timed out", raw=None)
    detail = scrub(str(exc), secret) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ProviderError(ProviderErrorKind.SERVER, f"cannot connect to upstream: {detail}")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return ProviderError(ProviderErrorKind.SERVER, f"upstream response cut short: {detail}")
    return ProviderError(ProviderErrorKind.SERVER, f"upstream connection failed: {detail}")


def malformed(what: str, raw: Any = None) -> ProviderError:
    return ProviderError(ProviderErrorKind.SERVER, f"malformed upstream {what}", raw=raw)


def loads(data: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data if isinstance(data, str) else data[:RAW_LIMIT].decode("utf-8", "replace")
        raise malformed(what, raw=text[:RAW_LIMIT])


# --- send ---------------------------------------------------------------------------------------------------


async def _open(request: UpstreamRequest, timeouts: Timeouts) -> aiohttp.ClientResponse:
    return await get_session().post(
        request.url, data=orjson.dumps(request.json), headers=request.headers, timeout=_client_timeout(timeouts)
    )


async def post_json(request: UpstreamRequest, timeouts: Timeouts, secret: str) -> Any:
    """POST `request` and return its parsed JSON answer; every failure is a ProviderError."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeouts.first_byte) as deadline:
            response = await _open(request, timeouts)
            deadline.reschedule(loop.time() + timeouts.read)
            try:
                data = await response.read()
            finally:
                response.release()
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise error_for_exception(exc, secret)
    if response.status >= 400:
        raise error_for_status(response.status, data, response.headers, secret)
    return loads(data, "JSON body")


async def post_sse(request: UpstreamRequest, timeouts: Timeouts, secret: str) -> AsyncIterator[ServerSentEvent]:
    """POST `request` and yield the server-sent events of the answer; every failure is a ProviderError.

    Closing the iterator early (or cancelling its task) closes the upstream connection.
    """
    response: aiohttp.ClientResponse | None = None
    finished = False
    decoder = SSEDecoder()
    try:
        try:
            async with asyncio.timeout(timeouts.first_byte):
                response = await _open(request, timeouts)
                if response.status >= 400:
                    raise error_for_status(response.status, await response.read(), response.headers, secret)
                if "text/event-stream" not in response.headers.get("Content-Type", ""):
                    data = await response.read()
                    raise malformed("stream (not an event stream)", raw=decode_error_body(data, secret))
                events: list[ServerSentEvent] = []
                while not events:
                    chunk = await response.content.readany()
                    events = decoder.feed(chunk) if chunk else decoder.flush()
                    if not chunk:
                        break
            for event in events:
                yield event
            while chunk:
                chunk = await response.content.readany()
                for event in decoder.feed(chunk) if chunk else decoder.flush():
                    yield event
            finished = True
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise error_for_exception(exc, secret)
    finally:
        if response is not None:
            if finished:
                response.release()
            else:
                response.close()


# --- adapter base -------------------------------------------------------------------------------------------


class StreamParser(Protocol):
    """Turns one upstream's SSE events into canonical events, then builds the final result."""

    def feed(self, event: ServerSentEvent) -> list[CanonicalEvent]: ...

    def finish(self) -> CanonicalResult: ...


class HttpAdapter(Adapter):
    """An adapter over HTTP: pure build/parse functions plus the shared send."""

    def parse_response(self, data: Any) -> CanonicalResult:
        raise NotImplementedError

    def stream_parser(self, call: UpstreamCall) -> StreamParser:
        raise NotImplementedError

    async def complete(self, call: UpstreamCall) -> CanonicalResult:
        secret = call.credential.api_key
        data = await post_json(self.build_request(call), call.timeouts, secret)
        try:
            return self.parse_response(data)
        except ProviderError as error:
            error.raw, error.message = scrub(error.raw, secret), scrub(error.message, secret)
            raise

    async def stream(self, call: UpstreamCall) -> AsyncIterator[CanonicalEvent]:
        secret = call.credential.api_key
        parser = self.stream_parser(call)
        yielded = False
        try:
            request = self.build_request(call)
            async with contextlib.aclosing(post_sse(request, call.timeouts, secret)) as events:
                async for sse in events:
                    for event in parser.feed(sse):
                        yielded = True
                        yield event
            result = parser.finish()
        except ProviderError as error:
            error.before_first_event = not yielded
            error.raw, error.message = scrub(error.raw, secret), scrub(error.message, secret)
            raise
        yield StreamDone(result)
