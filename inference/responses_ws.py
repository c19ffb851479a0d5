"""The Responses API over a WebSocket: GET /api/v1/responses with `Upgrade: websocket` (Codex CLI's transport when
its provider sets `supports_websockets = true`).

The key is checked at connect (`Authorization: Bearer <key>`; refused: the handshake is answered 401, or 403 where
the server cannot send a status). Each text message `{"type": "response.create", ...Responses body}` is one
request through the same pipeline as POST /api/v1/responses (validation, every middleware: auth, guardrails,
rate limits, budgets, accounting, one Generation row per turn), always streamed: its events come back one message
each, exactly the `data` of the SSE events (`response.created` ... `response.completed`). A message that is not
valid JSON, of another type, or a request refused before its stream starts, is answered with one
`{"type": "error", "status": <HTTP status>, "error": {...the envelope's error}}` event; the socket stays open.
Turns on one socket run one after another; the socket closing during a turn cancels it (its upstream call closed,
a `cancelled` Generation), as a disconnect does over HTTP.

`generate: false` (Codex's prewarm) is answered at once, with no model call and nothing charged (`_prewarm`).
`previous_response_id` is honoured within one socket, as OpenAI's WebSocket mode does: when it names the previous
turn's response, that turn's input and output items are put before the new `input` (the gateway itself keeps no
state between sockets; another id is a 400 error event).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from accounts.middleware import KeyAuthMiddleware
from gateway_project.api.errors import GatewayError, validation_error
from inference.consumers import (
    InferenceConsumer,
    Responder,
    _cut_cycles,
    _header_session_id,
    _headers,
    _metadata_enabled,
    responses_consumer,
)
from inference.ingress import RESPONSES
from inference.pipeline.context import Context, Usage
from inference.response import new_uuid, response_id, response_object, usage_object

logger = logging.getLogger("gateway.inference")


class SocketResponder:
    """The consumer's Responder interface over a WebSocket: the SSE frames a turn writes are sent as one message
    per event (their `data`), an error before the stream as one `error` event."""

    __slots__ = ("_send", "complete", "extra", "extra_headers", "ingress", "last_write", "request_id", "started")

    def __init__(self, send, request_id: str) -> None:
        self._send = send
        self.request_id = request_id
        self.ingress = RESPONSES
        self.started = self.complete = False
        self.extra = ()
        self.extra_headers: list[tuple[bytes, bytes]] = []
        self.last_write = time.monotonic()

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True

    async def body(self, data: bytes, more: bool = False) -> None:
        self.last_write = time.monotonic()
        if not more:
            self.complete = True
        for frame in data.split(b"\n\n"):
            start = frame.find(b"data: ")
            if start < 0 or frame.startswith(b"data: [DONE]", start):
                continue  # keep-alive comments, the end marker
            await self._send({"type": "websocket.send", "text": frame[start + 6 :].decode()})

    async def send_json(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.started = self.complete = True
        await send_error(self._send, status, orjson.loads(data).get("error") or {})

    error = Responder.error  # the same decisions as over HTTP, written through this responder


async def send_error(send, status: int, error: dict[str, Any]) -> None:
    event = {"type": "error", "status": status, "error": error}
    await send({"type": "websocket.send", "text": orjson.dumps(event).decode()})


class Conversation:
    """The previous turn of this socket, for `previous_response_id`."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.items: list[Any] = []

    def expand(self, message: dict[str, Any]) -> dict[str, Any]:
        previous = message.pop("previous_response_id", None)
        if previous is None:
            return message
        if previous != self.last_id:
            raise validation_error("previous_response_id", "is not the previous response of this WebSocket")
        new = message.get("input")
        new = [{"type": "message", "role": "user", "content": new}] if isinstance(new, str) else (new or [])
        message["input"] = [*self.items, *new]
        return message

    def remember(self, ctx: Context) -> None:
        if ctx.outcome.status != "completed":
            return
        sent = ctx.body.get("input")
        sent = [{"type": "message", "role": "user", "content": sent}] if isinstance(sent, str) else (sent or [])
        self.items = [*sent, *(ctx.outcome.output or [])]
        self.last_id = response_id(ctx)


async def _authenticated(headers: dict[str, str], client: str) -> None:
    """The key check of KeyAuthMiddleware, at connect."""

    async def nothing(ctx: Context) -> None:
        return None

    now = datetime.now(UTC)
    probe = Context("", now, time.perf_counter(), "GET", "", "", headers, b"", client_address=client)
    await KeyAuthMiddleware(nothing)(probe)


async def responses_websocket(scope, receive, send) -> None:
    """ASGI application of the `websocket` scope on /api/v1/responses."""
    if (await receive())["type"] != "websocket.connect":
        return
    headers = _headers(scope)
    client = (scope.get("client") or ("",))[0] or ""
    try:
        await _authenticated(headers, client)
    except GatewayError as error:
        await _refuse(scope, send, error)
        return
    await send({"type": "websocket.accept"})
    conversation = Conversation()
    waiting: list[dict[str, Any]] = []  # messages that came while a turn ran: served in order after it
    listener: asyncio.Task | None = None
    try:
        while True:
            if waiting:
                message = waiting.pop(0)
            elif listener is not None:  # a receive started while the previous turn ran
                message, listener = await listener, None
            else:
                message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message["type"] != "websocket.receive":
                continue
            raw = message.get("text")
            raw = raw.encode() if raw is not None else message.get("bytes") or b""
            work = asyncio.ensure_future(_turn(raw, headers, client, scope, send, conversation))
            while not work.done():  # the client going away cancels the turn, as a disconnect does over HTTP
                listener = listener or asyncio.ensure_future(receive())
                await asyncio.wait((work, listener), return_when=asyncio.FIRST_COMPLETED)
                if listener.done():
                    waiting.append(listener.result())
                    listener = None
                    if waiting[-1]["type"] == "websocket.disconnect":
                        work.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await work
                        return
            work.result()
    finally:
        if listener is not None:
            listener.cancel()


async def _refuse(scope, send, error: GatewayError) -> None:
    if "websocket.http.response" in (scope.get("extensions") or {}):
        body = orjson.dumps(error.envelope())
        head = [(b"content-type", b"application/json")]
        await send({"type": "websocket.http.response.start", "status": error.status, "headers": head})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


async def _turn(raw: bytes, headers, client: str, scope, send, conversation: Conversation) -> None:
    started = time.perf_counter()
    request_id = str(new_uuid())
    try:
        message = orjson.loads(raw)
        if not isinstance(message, dict) or message.get("type") != "response.create":
            raise validation_error("type", "must be response.create")
        message.pop("type")
        message.pop("stream", None)
        generate = message.pop("generate", True)
        if not isinstance(generate, bool):
            raise validation_error("generate", "must be a boolean")
        body = RESPONSES.parse(orjson.dumps(conversation.expand(message)), headers)
        body["stream"] = True
        session_id = body.get("session_id") or _header_session_id(headers)
    except orjson.JSONDecodeError as exc:
        await send_error(send, 400, GatewayError(400, f"Malformed JSON message: {exc}").envelope()["error"])
        return
    except GatewayError as error:
        await send_error(send, error.status, error.envelope()["error"])
        return
    responder = SocketResponder(send, request_id)
    ctx = Context(
        request_id=request_id,
        created_at=datetime.now(UTC),
        started=started,
        method="POST",
        path=scope["path"],
        host=headers.get("host", "").split(":")[0],
        headers=headers,
        raw_body=raw,
        client_address=client,
        body=body,
        metadata_enabled=_metadata_enabled(headers),
        session_id=session_id or None,
        client_ip=client,
        ingress_format=RESPONSES.name,
        ingress=RESPONSES,
    )
    if not generate:
        await _prewarm(ctx, send, conversation)
        return
    ctx.extras["inference.responder"] = responder
    ctx.extras["inference.requested"] = body.get("model") or ",".join(body.get("models") or ())
    InferenceConsumer.active += 1
    try:
        await responses_consumer._run(ctx, responder)
        conversation.remember(ctx)
    finally:
        _cut_cycles(ctx)
        InferenceConsumer.active -= 1


async def _prewarm(ctx: Context, send, conversation: Conversation) -> None:
    """`generate: false` (Codex's prewarm of a socket): the request is validated and becomes the turn that the next
    `previous_response_id` continues, with no model call, no charge and no Generation row: `response.created` and
    a `response.completed` with no output and zero usage."""
    usage = usage_object(Usage(), Decimal(0), False)
    created = response_object(ctx, status="in_progress", output=[], model=ctx.body.get("model"))
    completed = response_object(ctx, status="completed", output=[], usage=usage, model=ctx.body.get("model"))
    for number, (kind, response) in enumerate((("response.created", created), ("response.completed", completed))):
        event = {"type": kind, "response": response, "sequence_number": number}
        await send({"type": "websocket.send", "text": orjson.dumps(event).decode()})
    ctx.outcome.status = "completed"
    conversation.remember(ctx)
