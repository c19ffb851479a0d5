"""The ASGI entry of the data plane's inference endpoints (in the shape of Channels' AsyncHttpConsumer, without a
channel layer): POST /api/v1/responses, /api/v1/chat/completions and /api/v1/messages, one consumer per
ingress format (inference.ingress) around the same middleware chain.

It reads the body (413 over GATEWAY_MAX_BODY_BYTES while receiving), lets the ingress validate and translate
it into the canonical request (400), builds the `Context` and runs the `GATEWAY_INFERENCE_MIDDLEWARE` chain
around `inference.handler.handle` as a task. While the task runs it listens for `http.disconnect` and
cancels the task at once, so the upstream call is cancelled and the middlewares' `finally` blocks
(accounting, budget settlement) still run. A streamed request gets SSE keep-alive comments while nothing
is written (inference.keepalive). Every failure is written in the ingress's error shape; an unreachable
database is 503 with `Retry-After`. `OPTIONS` answers CORS preflights (inference.cors).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from gateway_project.api.errors import GatewayError, database_unavailable, validation_error
from inference.cors import cors_headers, preflight_headers
from inference.ingress import CHAT, MESSAGES, RESPONSES, SSE_HEADERS, Ingress
from inference.keepalive import keep_alive
from inference.pipeline.context import Context
from inference.pipeline.runner import build_chain
from inference.response import new_uuid, service_metadata
from inference.schema import MAX_IDENTIFIER

logger = logging.getLogger("gateway.inference")

NOSNIFF = (b"x-content-type-options", b"nosniff")  # as Django's SecurityMiddleware does on the management plane
METADATA_HEADERS = ("x-service-metadata", "x-service-experimental-metadata")


class Responder:
    """Writes the HTTP response through the ASGI `send` callable and remembers how far it got."""

    __slots__ = ("_send", "complete", "extra", "extra_headers", "ingress", "last_write", "request_id", "started")

    def __init__(self, send, request_id: str, ingress: Ingress = RESPONSES, extra=()) -> None:
        self._send = send
        self.started = False
        self.complete = False
        self.request_id = request_id
        self.ingress = ingress
        self.extra = extra  # CORS headers of an allowed Origin
        self.extra_headers: list[tuple[bytes, bytes]] = []  # on every answer (e.g. x-ratelimit-*, set by ratelimits)
        self.last_write = time.monotonic()

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        """Send the response head; a second call is a no-op (a keep-alive comment may have started the stream)."""
        if self.started:
            return
        self.started = True
        headers = [*headers, *self.extra, *self.extra_headers, (b"x-request-id", self.request_id.encode()), NOSNIFF]
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, data: bytes, more: bool = False) -> None:
        if not more:
            self.complete = True
        self.last_write = time.monotonic()
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def send_json(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        extra = [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
        await self.start(status, [(b"content-type", b"application/json"), *extra])
        await self.body(data)

    async def error(self, error: GatewayError, ctx: Context | None) -> None:
        """The ingress's error body before the first byte; its in-stream error events inside a started stream."""
        if ctx is not None and ctx.metadata_enabled and error.service_metadata is None:
            error.service_metadata = service_metadata(ctx)
        if not self.started:
            await self.send_json(error.status, self.ingress.error_body(error), error.headers)
            return
        if self.complete or ctx is None:
            return
        writer = ctx.extras.get("inference.stream")
        if writer is not None:
            await writer.fail(error.message, "server", error.metadata)
        else:  # only keep-alive comments went out
            await self.body(self.ingress.stream_error_frames(error))


async def read_body(receive, limit: int) -> bytes | None:
    """The request body, or None when the client went away; 413 as soon as it grows over `limit`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise GatewayError(413, f"Request payload too large (limit {limit} bytes)")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


class InferenceConsumer:
    """ASGI application of one ingress format; the middleware chain is built once, on first use, and shared by
    every ingress, as is `active` (requests in progress, accounting included: tests and shutdown wait for 0)."""

    _chain = None
    active = 0

    def __init__(self, ingress: Ingress) -> None:
        self.ingress = ingress

    @property
    def chain(self):
        if InferenceConsumer._chain is None:
            from inference.handler import handle

            InferenceConsumer._chain = build_chain(handle, gates_admission=True)
        return InferenceConsumer._chain

    async def __call__(self, scope, receive, send) -> None:
        InferenceConsumer.active += 1
        try:
            await self._call(scope, receive, send)
        finally:
            InferenceConsumer.active -= 1

    async def _call(self, scope, receive, send) -> None:
        started = time.perf_counter()
        request_id = str(new_uuid())
        headers = _headers(scope)
        origin = headers.get("origin")
        responder = Responder(send, request_id, self.ingress, cors_headers(origin))
        if scope["method"] == "OPTIONS":
            await responder.start(204, preflight_headers(headers))
            await responder.body(b"")
            return
        if scope["method"] != "POST":
            error = GatewayError(405, f'Method "{scope["method"]}" not allowed', headers={"Allow": "POST, OPTIONS"})
            await responder.error(error, None)
            return
        self.ingress.prepare_headers(headers)
        limit = settings.GATEWAY_MAX_BODY_BYTES
        try:
            declared = int(headers.get("content-length") or 0)
        except ValueError:
            declared = 0
        try:
            if declared > limit:
                raise GatewayError(413, f"Request payload too large (limit {limit} bytes)")
            raw = await read_body(receive, limit)
            if raw is None:
                return
            body = self.ingress.parse(raw, headers)
            session_id = body.get("session_id") or _header_session_id(headers)
        except GatewayError as error:
            await responder.error(error, None)
            return
        except Exception:  # a validator bug must still answer in the envelope, never uvicorn's text/plain 500
            logger.exception("inference request %s: body validation failed", request_id)
            await responder.error(GatewayError(500), None)
            return
        ctx = Context(
            request_id=request_id,
            created_at=datetime.now(UTC),
            started=started,
            method="POST",
            path=scope["path"],
            host=headers.get("host", "").split(":")[0],
            headers=headers,
            raw_body=raw,
            client_address=(scope.get("client") or ("",))[0] or "",
            body=body,
            metadata_enabled=_metadata_enabled(headers),
            session_id=session_id or None,
            client_ip=(scope.get("client") or ("", 0))[0],
            ingress_format=self.ingress.name,
            ingress=self.ingress,
        )
        ctx.extras["inference.responder"] = responder
        ctx.extras["inference.requested"] = body.get("model") or ",".join(body.get("models") or ())
        await self._serve(ctx, responder, receive)

    async def _serve(self, ctx: Context, responder: Responder, receive) -> None:
        # loop.create_task, not asyncio.ensure_future: the latter first asks whether a coroutine is a future, a
        # failed attribute lookup on its type that costs more than the task (bench/instructions.py).
        loop = asyncio.get_running_loop()
        work = loop.create_task(self._run(ctx, responder))
        listener = loop.create_task(receive())
        interval = settings.GATEWAY_SSE_KEEPALIVE_SECONDS if ctx.stream else 0
        pinger = loop.create_task(keep_alive(responder, interval, SSE_HEADERS)) if interval > 0 else None
        disconnected = False

        def on_message(future: asyncio.Future) -> None:
            nonlocal disconnected
            if future.cancelled() or future.exception() is not None:
                return
            if future.result()["type"] == "http.disconnect" and not responder.complete and not work.done():
                disconnected = True
                work.cancel()

        listener.add_done_callback(on_message)
        try:
            await work
        except asyncio.CancelledError:
            if not disconnected:
                raise
        finally:
            listener.cancel()
            if pinger is not None:
                pinger.cancel()
            _cut_cycles(ctx)

    async def _run(self, ctx: Context, responder: Responder) -> None:
        try:
            await self.chain(ctx)
        except GatewayError as error:
            await responder.error(error, ctx)
            _forget_tracebacks(error)
        except Exception as exc:
            error = database_unavailable(exc)
            if error is None:
                logger.exception("inference request %s failed", ctx.request_id)
                error = GatewayError(500)
            else:
                await _drop_broken_connection()
            await responder.error(error, ctx)
            _forget_tracebacks(exc)


def _cut_cycles(ctx: Context) -> None:
    """Cut the references that lead from the request's objects back to its Context once nothing writes to the
    client any more, so that the request is freed by reference counting when it ends instead of being left to
    the cyclic collector (whose collections cost CPU per object and pause every request in flight): the
    stream writer (it holds the Context that holds it), and the tracebacks of the error the request failed
    with (their frames hold the Context whose outcome holds the error), the errors it was raised from
    included. Metrics and the after-response hooks, which run later, read the error's status and message only.
    """
    ctx.extras.pop("inference.stream", None)
    _forget_tracebacks(ctx.outcome.error)


def _forget_tracebacks(error: BaseException | None) -> None:
    """Drop the tracebacks of `error` and of the errors it was raised from or while handling (a 402 raised
    from the hold task's refusal, whose traceback holds the frames that awaited that task)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        error.__traceback__ = None
        if error.__cause__ is not None:
            _forget_tracebacks(error.__context__)
        error = error.__cause__ or error.__context__


# The middlewares' database reads run on asgiref's thread-sensitive thread, whose connection lives across
# requests; a connection broken by a database restart is closed here (CONN_HEALTH_CHECKS decides) so the
# next request opens a fresh one.
_drop_broken_connection = sync_to_async(close_old_connections, thread_sensitive=True)


def _header_session_id(headers: dict[str, str]) -> str | None:
    """`x-session-id`, held to the body's `session_id` limit (it keys sticky routing and the Generation row)."""
    value = headers.get("x-session-id")
    if value is not None and len(value) > MAX_IDENTIFIER:
        raise validation_error("x-session-id", f"must be at most {MAX_IDENTIFIER} characters")
    return value


def _metadata_enabled(headers: dict[str, str]) -> bool:
    for name in METADATA_HEADERS:
        value = headers.get(name)
        if value is not None:
            return value.strip().lower() == "enabled"
    return False


responses_consumer = InferenceConsumer(RESPONSES)
chat_consumer = InferenceConsumer(CHAT)
messages_consumer = InferenceConsumer(MESSAGES)
