"""The thin shared send of the HTTP adapters: the upstream call over the process's aiohttp session
(inference.providers.upstream: keep-alive connections pooled per event loop, the environment's egress proxy),
time limits, server-sent events, and the mapping of every upstream failure to a `ProviderErrorKind`.

Time limits (`Timeouts` of the call): `connect` for a free pooled connection or a new one (TCP connect, the
proxy's tunnel and TLS handshake; running out of it sent nothing, so it is not billed). A JSON call has one
limit, `total`, from the send until the whole body was read: a provider answers a non-streaming call only when
the answer is done, so a "first byte" limit would cut long generations; running out is TIMEOUT marked
`maybe_billed` (routing does not send the same request to another provider, which would pay twice). A stream
has `first_byte` from the send until its first event, and `read` between two events: bytes that carry no
event (comment pings) do not count as progress, so an upstream that only pings is cut after `read` seconds.
Any of them running out is `TIMEOUT`; past the connect it is marked `maybe_billed` too (a stream without its
first event in time included: the provider had the request and may be generating it), so routing does not
re-send it.

Redirects are never followed: a 3xx is SERVER without its body (a redirect would carry the platform key and
the prompt to a host outside the catalog, past the SSRF guard). A stream ends at its `[DONE]` sentinel:
nothing the upstream sends after it is read (its connection goes back to the pool when the answer's end came
with it, and is closed otherwise). A 2xx answer the adapter cannot parse (not JSON, valid JSON of a wrong
shape, counts that are negative or fractional, a stream that is not an event stream or ends before its
completion event) is SERVER ("malformed upstream ...") marked `maybe_billed`: the provider answered success
and may bill it, so it is charged its hold and not sent to another candidate (docs/budgets.md). An error
object the provider sends inside a 2xx body or stream is not marked (it says the request failed).

Size limit: `settings.GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES` bounds what is read of one answer (a JSON body,
or all the bytes of a stream; decompressed, and the compressed bytes received too); a larger answer is
SERVER ("upstream response larger than N bytes") and its connection is closed at once, so a runaway or
hostile upstream cannot grow the process's memory (a 2xx one is marked `maybe_billed`).

Failures are mapped by inference.providers.errors (statuses, transport errors, malformed bodies, errors
inside a body or stream); a stream that ends before its completion event is SERVER. The credential of the
call never appears in an error's message or `raw`.

Adapters subclass `HttpAdapter` and provide the pure parts: `build_request`, `parse_response` (JSON →
`CanonicalResult`) and `stream_parser()` (SSE events → canonical events, then the result).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import aiohttp
import orjson
from django.conf import settings
from yarl import URL

from inference.providers import namespaces, upstream
from inference.providers.base import (
    FLUSH,
    Adapter,
    CanonicalEvent,
    CanonicalResult,
    FunctionCallDelta,
    FunctionCallDone,
    ProviderError,
    ProviderErrorKind,
    StreamDone,
    Timeouts,
    UpstreamCall,
    UpstreamRequest,
)
from inference.providers.deadline import EventDeadline
from inference.providers.errors import (
    RAW_LIMIT,
    body_error,
    decode_error_body,
    error_for_exception,
    error_for_status,
    loads,
    malformed,
    scrub,
)
from inference.providers.sse import ServerSentEvent, SSEDecoder
from inference.providers.upstream import close_session, get_session

__all__ = ["HttpAdapter", "close_session", "get_session", "post_json", "post_sse"]


def max_response_bytes() -> int:
    return settings.GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES


def too_large() -> ProviderError:
    limit = max_response_bytes()
    return ProviderError(
        ProviderErrorKind.SERVER,
        f"upstream response larger than {limit} bytes (GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES)",
    )


async def _read_all(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, or `too_large()` as soon as it (its declared length, its decompressed bytes or the
    compressed bytes received) exceeds `limit`."""
    content = response.content
    if (response.content_length or 0) > limit:
        raise too_large()
    parts: list[bytes] = []
    size = 0
    while chunk := await content.readany():
        size += len(chunk)
        if size > limit or content.total_raw_bytes > limit:
            raise too_large()
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


# --- send ---------------------------------------------------------------------------------------------------


Gate = Callable[[], Awaitable[None]]


@functools.lru_cache(maxsize=256)
def _target(url: str) -> URL:
    """The parsed URL of an upstream call; ValueError for one the client cannot use (scheme, host, port)."""
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"unsupported URL {url!r} (an absolute http or https URL is needed)")
    parsed.port  # noqa: B018  (raises on a port out of range)
    return parsed


async def _prepared(request: UpstreamRequest, gate: Gate | None, secret: str) -> tuple[URL, bytes]:
    """(URL, body) of `request`, built whole, then `gate` awaited (UpstreamCall.gate: the admission checks sent
    ahead; what it raises, a refusal, goes through as it is): the building overlaps their travel, and nothing
    is sent, no connection taken and no upstream time limit running until they passed. A request that cannot be
    built is a ProviderError, not billed (nothing was sent)."""
    try:
        url = _target(request.url)
    except (ValueError, TypeError) as error:
        raise ProviderError(ProviderErrorKind.SERVER, scrub(f"cannot connect to upstream: {error}", secret)) from None
    body = orjson.dumps(request.json)
    if gate is not None:
        await gate()
    return url, body


async def _open(url: URL, body: bytes, headers: dict[str, str], timeouts: Timeouts) -> aiohttp.ClientResponse:
    if url.raw_user is not None and any(name.lower() == "authorization" for name in headers):
        url = url.with_user(None)  # the request's own credentials win over the URL's (aiohttp refuses both)
    headers, proxy, proxy_headers = upstream.proxy_for_url(url, headers)
    response = await get_session().request(
        "POST",
        url,
        data=body,
        headers=headers,
        timeout=upstream.connect_timeout(timeouts.connect),
        allow_redirects=False,
        proxy=proxy,
        proxy_headers=proxy_headers,
    )
    if 300 <= response.status < 400:
        response.close()  # the redirect's body (and its target) stays unread
        raise ProviderError(
            ProviderErrorKind.SERVER,
            f"upstream answered {response.status} (a redirect); redirects are not followed",
            status=response.status,
        )
    return response


def _not_sent(error: ValueError, secret: str) -> ProviderError:
    """A request aiohttp refuses to write (a header with a control character, a proxy variable that is not an
    http:// URL): nothing was sent."""
    if isinstance(error, upstream.UnsupportedProxy):
        return ProviderError(ProviderErrorKind.SERVER, f"cannot connect to upstream: {error}")
    return ProviderError(ProviderErrorKind.SERVER, scrub(f"invalid upstream request: {error}", secret))


async def post_json(request: UpstreamRequest, timeouts: Timeouts, secret: str, gate: Gate | None = None) -> Any:
    """POST `request` and return its parsed JSON answer; every failure is a ProviderError. One that the provider
    may have billed is marked `maybe_billed`: a timeout after the send, a 2xx answer whose body broke off or
    grew past the size limit (it generated the answer), an upstream 524 (its edge gave up waiting for it).
    `gate`: see `_prepared` (what it raises is not an upstream failure: it is not mapped)."""
    url, body = await _prepared(request, gate, secret)
    answered = False
    response: aiohttp.ClientResponse | None = None
    try:
        async with asyncio.timeout(timeouts.total):
            response = await _open(url, body, request.headers, timeouts)
            answered = response.status < 300
            data = await _read_all(response, max_response_bytes())
    except TimeoutError as exc:
        error = error_for_exception(exc, secret)
        # Past the connect the request reached the provider, which may be generating (and billing) it.
        error.maybe_billed = response is not None or not isinstance(exc, aiohttp.ConnectionTimeoutError)
        raise error from None
    except aiohttp.ClientError as exc:  # connect, cut short, disconnected, an invalid answer
        error = error_for_exception(exc, secret)
        error.maybe_billed = answered
        raise error from None
    except ProviderError as error:
        error.maybe_billed = error.maybe_billed or answered
        raise
    except ValueError as exc:
        raise _not_sent(exc, secret) from None
    finally:
        if response is not None:
            response.release()  # back to the pool when read to its end, closed otherwise
    if response.status >= 400:
        raise error_for_status(response.status, data, response.headers, secret)
    return loads(data, "JSON body")


async def _next_events(
    response: aiohttp.ClientResponse, decoder: SSEDecoder, size: int, limit: int
) -> tuple[list[ServerSentEvent], bytes, int]:
    """(the events of the next reads, the last chunk read (b"" at the body's end), bytes read so far): reads
    until one carries an event or the body ends."""
    content = response.content
    while True:
        chunk = await content.readany()
        size += len(chunk)
        if size > limit or content.total_raw_bytes > limit:
            raise too_large()
        events = decoder.feed(chunk) if chunk else decoder.flush()
        if events or not chunk:
            return events, chunk, size


async def post_sse(
    request: UpstreamRequest, timeouts: Timeouts, secret: str, gate: Gate | None = None
) -> AsyncIterator[list[ServerSentEvent]]:
    """POST `request` and yield the server-sent events of the answer, as the list of events of each read from
    the upstream connection (never empty); every failure is a ProviderError.

    Closing the iterator early (or cancelling its task) closes the upstream connection. As for `post_json`, a
    failure the provider may have billed is marked `maybe_billed`: a timeout after the send (no first event in
    time included: the provider may be generating), and a 2xx answer that broke off, grew past the size limit
    or was not an event stream. `gate`: see `_prepared` (what it raises is not an upstream failure: it is not
    mapped).
    """
    url, body = await _prepared(request, gate, secret)
    response: aiohttp.ClientResponse | None = None
    deadline: EventDeadline | None = None
    answered = False
    decoder = SSEDecoder()
    limit = max_response_bytes()
    try:
        try:
            async with asyncio.timeout(timeouts.first_byte):
                response = await _open(url, body, request.headers, timeouts)
                answered = response.status < 300
                if response.status >= 400:
                    data = await _read_all(response, limit)
                    raise error_for_status(response.status, data, response.headers, secret)
                if "text/event-stream" not in response.headers.get("Content-Type", ""):
                    raw = decode_error_body(await _read_all(response, limit), secret)
                    if isinstance(raw, dict) and raw.get("error"):
                        answered = False  # an error object: the provider says the request failed
                        raise body_error(raw["error"], raw=raw)
                    raise malformed("stream (not an event stream)", raw=raw)
                events, chunk, size = await _next_events(response, decoder, 0, limit)
            if events:
                yield events
            deadline = EventDeadline(timeouts.read)
            while chunk:
                with deadline:  # per event: bytes without an event are no progress
                    events, chunk, size = await _next_events(response, decoder, size, limit)
                if events:
                    yield events
        except TimeoutError as exc:
            error = error_for_exception(exc, secret)
            # Past the connect the request reached the provider, which may be generating (and billing) it.
            error.maybe_billed = response is not None or not isinstance(exc, aiohttp.ConnectionTimeoutError)
            raise error from None
        except aiohttp.ClientError as exc:  # connect, cut short, disconnected, an invalid answer
            error = error_for_exception(exc, secret)
            error.maybe_billed = answered
            raise error from None
        except ProviderError as error:  # a 2xx answer past the size limit
            error.maybe_billed = error.maybe_billed or answered
            raise
        except ValueError as exc:
            raise _not_sent(exc, secret) from None
    finally:
        if deadline is not None:
            deadline.close()
        if response is not None:
            # Back to the pool when the answer is complete on the wire (its end usually arrives with the
            # `[DONE]` the consumer stops at), closed otherwise (a stream left before its end, an error).
            response.release()


# --- adapter base -------------------------------------------------------------------------------------------


class StreamParser(Protocol):
    """Turns one upstream's SSE events into canonical events, then builds the final result."""

    def feed(self, event: ServerSentEvent) -> list[CanonicalEvent]: ...

    def finish(self) -> CanonicalResult: ...


def _scrubbed(error: ProviderError, secret: str) -> ProviderError:
    error.raw, error.message = scrub(error.raw, secret), scrub(error.message, secret)
    error.args = (error.message,)
    return error


class HttpAdapter(Adapter):
    """An adapter over HTTP: pure build/parse functions plus the shared send."""

    def parse_response(self, data: Any) -> CanonicalResult:
        raise NotImplementedError

    def stream_parser(self, call: UpstreamCall) -> StreamParser:
        raise NotImplementedError

    def flattened_names(self, call: UpstreamCall) -> dict[str, tuple[str, str]] | None:
        """The request's namespace functions this format sees under flat names (None: none, or a format that
        takes namespace tools as they are)."""
        return namespaces.names(call.body)

    async def complete(self, call: UpstreamCall) -> CanonicalResult:
        secret = call.credential.api_key
        data = await post_json(self.build_request(call), call.timeouts, secret, call.gate)
        try:
            result = self.parse_response(data)
            found = self.flattened_names(call)
            return result if found is None else namespaces.restore_result(result, found)
        except ProviderError as error:
            raise _scrubbed(error, secret)
        except PARSE_ERRORS as exc:
            raw = orjson.dumps(data)[:RAW_LIMIT].decode("utf-8", "replace")
            raise _scrubbed(malformed(f"JSON body ({type(exc).__name__}: {exc})", raw=raw), secret)

    async def stream(self, call: UpstreamCall) -> AsyncIterator[CanonicalEvent]:
        secret = call.credential.api_key
        parser = self.stream_parser(call)
        yielded = False
        found = self.flattened_names(call)
        try:
            request = self.build_request(call)
            async with contextlib.aclosing(post_sse(request, call.timeouts, secret, call.gate)) as reads:
                async for events in reads:
                    produced = done = False
                    for sse in events:
                        for event in _feed(parser, sse):
                            yielded = produced = True
                            if found is not None and isinstance(event, FunctionCallDone | FunctionCallDelta):
                                event = namespaces.restore_call(event, found)
                            yield event
                        if sse.data == DONE:
                            done = True  # the end: whatever the upstream sends after it is not read
                            break
                    if produced:
                        yield FLUSH
                    if done:
                        break
            result = _finish(parser)
            if found is not None:
                result = namespaces.restore_result(result, found)
        except ProviderError as error:
            error.before_first_event = not yielded
            raise _scrubbed(error, secret)
        yield StreamDone(result)


DONE = "[DONE]"
PARSE_ERRORS = (AttributeError, KeyError, IndexError, TypeError, ValueError)


def _feed(parser: StreamParser, sse: ServerSentEvent) -> list[CanonicalEvent]:
    """The parser's events for one SSE event; a chunk of an unexpected shape is a malformed stream."""
    try:
        return parser.feed(sse)
    except PARSE_ERRORS as exc:
        raise malformed(f"stream event ({type(exc).__name__}: {exc})", raw=sse.data[:RAW_LIMIT])


def _finish(parser: StreamParser) -> CanonicalResult:
    try:
        return parser.finish()
    except PARSE_ERRORS as exc:
        raise malformed(f"stream ({type(exc).__name__}: {exc})")
