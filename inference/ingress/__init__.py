"""Ingress adapters: the wire formats clients speak, around the one canonical pipeline.

An `Ingress` turns a wire request into the canonical (Responses) request body before the middleware chain
runs (`parse`), and renders what the handler produced in that wire format: the JSON answer
(`json_answer`), the stream writer (`stream_writer`, the same interface as `inference.streaming.
ResponseStream`: open / handle / fail / streamed_text) and errors (`error_body`, `stream_error`). Auth,
presets, guardrails, budgets, routing, provider adapters, accounting and observability never know which
ingress a request came through, except for `Generation.ingress_format` (`Ingress.name`).

- `RESPONSES`: POST /api/v1/responses (the canonical format itself);
- `CHAT`: POST /api/v1/chat/completions (inference.ingress.chat_request / chat_response);
- `MESSAGES`: POST /api/v1/messages (inference.ingress.messages_request / messages_response), which also
  takes the key from `x-api-key`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.json_input import check_json, needs_scan
from inference.ingress import (
    chat_loop,
    chat_request,
    chat_response,
    messages_loop,
    messages_request,
    messages_response,
)
from inference.ingress.common import DEBUG_KEY, LoopAnswer, finish_outcome, mark_first_byte
from inference.pipeline.context import Candidate, Context
from inference.providers.base import CanonicalResult
from inference.response import response_object, usage_object
from inference.schema import parse_body

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def decode_body(raw: bytes) -> Any:
    """The decoded wire body, held to the rules of every JSON body (depth, NUL: gateway_project/json_input.py)
    before any member is read, as on /responses: a 400 naming the field, before routing."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"Malformed JSON body: {exc}") from None
    if needs_scan(raw):
        check_json(body)
    return body


class Ingress:
    """The Responses ingress; the other formats override what differs."""

    name = "responses"

    def prepare_headers(self, headers: dict[str, str]) -> None:
        """Adjust the request headers (lower-case names) before the chain reads them."""

    def parse(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """The canonical request body of the raw wire body (400 naming the wrong field)."""
        return parse_body(raw, forward_unknown=True)

    def json_answer(self, ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
        """The JSON answer; records the outcome (status, usage, cost, output) on the way."""
        cost = finish_outcome(ctx, candidate, result)
        payload = response_object(
            ctx,
            status=result.status,
            output=result.output,
            usage=usage_object(result.usage, cost, is_byok),
            incomplete_reason=result.incomplete_reason,
            model=candidate.model_slug,
        )
        debug = ctx.extras.get(DEBUG_KEY)
        if debug is not None:  # debug.echo_upstream_body on a JSON answer
            payload["debug"] = {"echo_upstream_body": debug}
        mark_first_byte(ctx)
        return orjson.dumps(payload)

    def stream_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        from inference.streaming import ResponseStream

        return ResponseStream(ctx, responder, candidate, is_byok)

    def error_body(self, error: GatewayError) -> bytes:
        return orjson.dumps(error.envelope())

    def check_server_tools(self, plan: Any) -> None:
        """400 naming a plugin or server tool whose answer this format cannot carry (Responses carries all)."""

    def loop_json(self, ctx: Context, answer: LoopAnswer) -> bytes:
        """The JSON answer of the server-tool loop (every turn's items, the summed usage and cost)."""
        payload = response_object(
            ctx,
            status=answer.result.status,
            output=answer.output,
            usage=usage_object(answer.usage, answer.cost, answer.is_byok),
            incomplete_reason=answer.result.incomplete_reason,
            model=answer.candidate.model_slug,
        )
        return orjson.dumps(payload)

    def loop_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        """The stream writer of the server-tool loop: `stream_writer`'s interface plus add_items / done_item (a
        server-tool call starting / finished), `sources` (url → title, for citations) and finish(result, usage,
        cost) (the end, with the totals of every turn)."""
        from inference.servertools.stream import LoopStream

        return LoopStream(ctx, responder, candidate, is_byok)

    def stream_error_frames(self, error: GatewayError) -> bytes:
        """The frames that end a stream whose head (and only keep-alive comments) went out before it failed."""
        payload = {"type": "error", "code": error.status, "message": error.message, "param": None}
        if error.metadata:
            payload["metadata"] = error.metadata
        return b"event: error\ndata: " + orjson.dumps(payload) + b"\n\ndata: [DONE]\n\n"


class ChatIngress(Ingress):
    name = "chat-completions"

    def parse(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        return chat_request.to_canonical(decode_body(raw))

    def json_answer(self, ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
        return chat_response.completion_json(ctx, result, candidate, is_byok)

    def stream_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        return chat_response.ChatStream(ctx, responder, candidate, is_byok, SSE_HEADERS)

    def loop_json(self, ctx: Context, answer: LoopAnswer) -> bytes:
        return chat_loop.loop_completion_json(ctx, answer)

    def loop_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        return chat_loop.ChatLoopStream(ctx, responder, candidate, is_byok, SSE_HEADERS)

    def stream_error_frames(self, error: GatewayError) -> bytes:
        detail: dict[str, Any] = {"code": error.status, "message": error.message}
        if error.metadata:
            detail["metadata"] = error.metadata
        return b"data: " + orjson.dumps({"error": detail}) + b"\n\ndata: [DONE]\n\n"


BETA = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
VERSION = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class MessagesIngress(Ingress):
    name = "messages"

    def prepare_headers(self, headers: dict[str, str]) -> None:
        """The anthropic SDK sends the key as `x-api-key`; `Authorization: Bearer` wins when both are sent."""
        key = headers.get("x-api-key")
        if key and not headers.get("authorization"):
            headers["authorization"] = f"Bearer {key}"

    def parse(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        version = headers.get("anthropic-version")
        if version is not None and not VERSION.match(version.strip()):
            raise validation_error("anthropic-version", "must be a version date such as 2023-06-01")
        betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
        for beta in betas:
            if not BETA.match(beta):
                raise validation_error("anthropic-beta", f"'{beta[:40]}' is not a beta feature name")
        return messages_request.to_canonical(decode_body(raw), betas)

    def json_answer(self, ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
        return messages_response.message_json(ctx, result, candidate, is_byok)

    def stream_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        return messages_response.MessagesStream(ctx, responder, candidate, is_byok, SSE_HEADERS)

    def check_server_tools(self, plan: Any) -> None:
        kinds = [implementation.kind for implementation, _ in plan.server_tools.values()]
        for kind in messages_loop.unsupported_kinds(kinds):
            raise validation_error("tools", f"{kind} is not supported on /messages: its result has no Messages block")

    def loop_json(self, ctx: Context, answer: LoopAnswer) -> bytes:
        return messages_loop.loop_message_json(ctx, answer)

    def loop_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        return messages_loop.MessagesLoopStream(ctx, responder, candidate, is_byok, SSE_HEADERS)

    def error_body(self, error: GatewayError) -> bytes:
        return orjson.dumps(messages_response.error_payload(error))

    def stream_error_frames(self, error: GatewayError) -> bytes:
        return b"event: error\ndata: " + orjson.dumps(messages_response.error_payload(error)) + b"\n\n"


RESPONSES = Ingress()
CHAT = ChatIngress()
MESSAGES = MessagesIngress()


def ingress_of(ctx: Context) -> Ingress:
    return ctx.ingress or RESPONSES
