"""The thin shared send of the HTTP adapters: the upstream call over the data plane's own HTTP/1.1 client
(inference.providers.upstream: keep-alive connections pooled per event loop), time limits, server-sent
events, and the mapping of every upstream failure to a `ProviderErrorKind`. (The aiohttp session of
`get_session` serves the web-search engines, not the upstream calls.)

Time limits (`Timeouts` of the call): `connect` for a free pooled connection or a new one (TCP connect and TLS
handshake; running out of it sent nothing, so it is not billed). A JSON call has one limit, `total`, from the
send until the whole body was read: a provider answers a non-streaming call only when the answer is done,
so a "first byte" limit would cut long generations; running out is TIMEOUT marked `maybe_billed` (routing
does not send the same request to another provider, which would pay twice). A stream has `first_byte` from
the send until its first event, and `read` between two events: bytes that carry no event (comment pings)
do not count as progress, so an upstream that only pings is cut after `read` seconds. Any of them running
out is `TIMEOUT`; past the connect it is marked `maybe_billed` too (a stream without its first event in time
included: the provider had the request and may be generating it), so routing does not re-send it.

Redirects are never followed: a 3xx is SERVER without its body (a redirect would carry the platform key and
the prompt to a host outside the catalog, past the SSRF guard). A stream ends at its `[DONE]` sentinel:
nothing the upstream sends after it is read. A 2xx answer the adapter cannot parse (not JSON, valid JSON of a
wrong shape, counts that are negative or fractional, a stream that is not an event stream or ends before its
completion event) is SERVER ("malformed upstream ...") marked `maybe_billed`: the provider answered success
and may bill it, so it is charged its hold and not sent to another candidate (docs/budgets.md). An error
object the provider sends inside a 2xx body or stream is not marked (it says the request failed).

Size limit: `settings.GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES` bounds what is read of one answer (a JSON body,
or all the bytes of a stream); a larger answer is SERVER ("upstream response larger than N bytes") and its
connection is closed at once, so a runaway or hostile upstream cannot grow the process's memory (a 2xx one
is marked `maybe_billed`).

Failures are mapped by inference.providers.errors (statuses, transport errors, malformed bodies, errors
inside a body or stream); a stream that ends before its completion event is SERVER. The credential of the
call never appears in an error's message or `raw`.

Adapters subclass `HttpAdapter` and provide the pure parts: `build_request`, `parse_response` (JSON →
`CanonicalResult`) and `stream_parser()` (SSE events → canonical events, then the result).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import aiohttp
import orjson
from django.conf import settings
from multidict import CIMultiDict, CIMultiDictProxy, istr

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

SKIPPED_AUTO_HEADERS = ("User-Agent",)  # never sent: the upstream learns nothing of the gateway's software
_SKIPPED = frozenset(istr(name) for name in SKIPPED_AUTO_HEADERS)
_SKIPPED_MULTIDICT = CIMultiDictProxy(CIMultiDict((name, None) for name in SKIPPED_AUTO_HEADERS))


class UpstreamClientRequest(aiohttp.ClientRequest):
    """aiohttp's request, adding the automatic headers (Accept and Accept-Encoding unless set; User-Agent never)
    without the multidict of skipped names and the copy of the request's headers aiohttp builds on every
    request whenever a session skips one (12.4 -> 8.9 µs a request built, docs/performance.md); any other skip
    set goes through aiohttp's own code."""

    def update_auto_headers(self, skip_auto_headers: Any) -> None:
        if skip_auto_headers != _SKIPPED:
            super().update_auto_headers(skip_auto_headers)
            return
        self._skip_auto_headers = _SKIPPED_MULTIDICT  # read by aiohttp when the payload's headers are added
        headers = self.headers
        for name, value in self.DEFAULT_HEADERS.items():
            if name not in headers:
                headers[name] = value


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
            # One session serves every tenant: a cookie set by one answer must never ride on another request.
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=SKIPPED_AUTO_HEADERS,
            request_class=UpstreamClientRequest,
        )
        _sessions[loop] = session
    return session


async def close_session() -> None:
    """Close the running loop's upstream connections and aiohttp session (at shutdown, or at the end of a test's
    event loop)."""
    upstream.close_pool()
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()


@atexit.register
def _drop_sessions_at_exit() -> None:
    """Close, without a loop, the sessions of loops that are gone (no "Unclosed client session" noise at exit)."""
    for loop, session in list(_sessions.items()):
        if not loop.is_running():
            connector = session.connector
            session.detach()
            if connector is not None:
                connector._close()  # the synchronous part of close(); nothing is left to await without a loop
    _sessions.clear()


def max_response_bytes() -> int:
    return settings.GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES


def too_large() -> ProviderError:
    limit = max_response_bytes()
    return ProviderError(
        ProviderErrorKind.SERVER,
        f"upstream response larger than {limit} bytes (GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES)",
    )


# --- send ---------------------------------------------------------------------------------------------------


Gate = Callable[[], Awaitable[None]]


async def _prepared(request: UpstreamRequest, gate: Gate | None, secret: str) -> upstream.Prepared:
    """`request` built whole, then `gate` awaited (UpstreamCall.gate: the admission checks sent ahead; what it
    raises, a refusal, goes through as it is): the building overlaps their travel, and nothing is sent, no
    connection taken and no upstream time limit running until they passed. A request that cannot be built is
    a ProviderError, not billed (nothing was sent)."""
    try:
        prepared = upstream.prepare(request.url, request.headers, orjson.dumps(request.json))
    except upstream.InvalidRequest as error:
        raise ProviderError(ProviderErrorKind.SERVER, f"invalid upstream request: {error}") from None
    except upstream.ConnectFailed as error:  # a URL the client cannot use (scheme, host, port)
        raise error_for_exception(error, secret) from None
    if gate is not None:
        await gate()
    return prepared


async def _open(request: upstream.Prepared, timeouts: Timeouts) -> upstream.Response:
    response = await upstream.get_pool().send(request, timeouts.connect, max_response_bytes(), too_large)
    if 300 <= response.status < 400:
        response.close()  # the redirect's body (and its target) stays unread
        raise ProviderError(
            ProviderErrorKind.SERVER,
            f"upstream answered {response.status} (a redirect); redirects are not followed",
            status=response.status,
        )
    return response


async def post_json(request: UpstreamRequest, timeouts: Timeouts, secret: str, gate: Gate | None = None) -> Any:
    """POST `request` and return its parsed JSON answer; every failure is a ProviderError. One that the provider
    may have billed is marked `maybe_billed`: a timeout after the send, a 2xx answer whose body broke off or
    grew past the size limit (it generated the answer), an upstream 524 (its edge gave up waiting for it).
    `gate`: see `_prepared` (what it raises is not an upstream failure: it is not mapped)."""
    prepared = await _prepared(request, gate, secret)
    sent = answered = False
    response: upstream.Response | None = None
    try:
        async with asyncio.timeout(timeouts.total):
            response = await _open(prepared, timeouts)
            sent = True
            answered = response.status < 300
            data = await response.read_all(too_large)
    except TimeoutError as exc:
        error = error_for_exception(exc, secret)
        # Past the connect the request reached the provider, which may be generating (and billing) it.
        error.maybe_billed = sent or not isinstance(exc, upstream.ConnectTimeout)
        raise error
    except ConnectionError as exc:  # the client's failures (connect, cut short, disconnected)
        error = error_for_exception(exc, secret)
        error.maybe_billed = answered
        raise error
    except ProviderError as error:
        error.maybe_billed = error.maybe_billed or answered
        raise
    finally:
        if response is not None:
            response.release()  # back to the pool when read to its end, closed otherwise
    if response.status >= 400:
        raise error_for_status(response.status, data, response.headers, secret)
    return loads(data, "JSON body")


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
    prepared = await _prepared(request, gate, secret)
    response: upstream.Response | None = None
    deadline: EventDeadline | None = None
    answered = False
    decoder = SSEDecoder()
    limit = max_response_bytes()
    size = 0
    try:
        try:
            async with asyncio.timeout(timeouts.first_byte):
                response = await _open(prepared, timeouts)
                answered = response.status < 300
                if response.status >= 400:
                    data = await response.read_all(too_large)
                    raise error_for_status(response.status, data, response.headers, secret)
                if "text/event-stream" not in response.headers.get("Content-Type", ""):
                    raw = decode_error_body(await response.read_all(too_large), secret)
                    if isinstance(raw, dict) and raw.get("error"):
                        answered = False  # an error object: the provider says the request failed
                        raise body_error(raw["error"], raw=raw)
                    raise malformed("stream (not an event stream)", raw=raw)
                events: list[ServerSentEvent] = []
                while not events:
                    chunk = await response.read_any()
                    size += len(chunk)
                    if size > limit:
                        raise too_large()
                    events = decoder.feed(chunk) if chunk else decoder.flush()
                    if not chunk:
                        break
            if events:
                yield events
            deadline = EventDeadline(timeouts.read)
            while chunk:
                with deadline:  # per event: bytes without an event are no progress
                    while True:
                        chunk = await response.read_any()
                        size += len(chunk)
                        if size > limit:
                            raise too_large()
                        events = decoder.feed(chunk) if chunk else decoder.flush()
                        if events or not chunk:
                            break
                if events:
                    yield events
        except TimeoutError as exc:
            error = error_for_exception(exc, secret)
            # Past the connect the request reached the provider, which may be generating (and billing) it.
            error.maybe_billed = response is not None or not isinstance(exc, upstream.ConnectTimeout)
            raise error
        except ConnectionError as exc:  # the client's failures (connect, cut short, disconnected)
            error = error_for_exception(exc, secret)
            error.maybe_billed = answered
            raise error
        except ProviderError as error:  # a 2xx answer past the size limit
            error.maybe_billed = error.maybe_billed or answered
            raise
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
