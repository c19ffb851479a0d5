"""One model turn of the server-tool loop, with fallback across candidates: JSON (`JsonTurns`) or streamed to
the client as it arrives (`StreamTurns`). Server-tool calls are kept back from the client; they are the
loop's to run."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from inference import handler
from inference.ingress import ingress_of
from inference.pipeline.context import Candidate, Context, Credential, Usage
from inference.providers.base import (
    CanonicalResult,
    FunctionCallDelta,
    FunctionCallDone,
    ProviderError,
    ProviderErrorKind,
    StreamDone,
    TextDelta,
    UpstreamCall,
)
from inference.providers.registry import get_adapter
from metering.estimate import OUTPUT_FRAMING_TOKENS, token_bound


@dataclass(slots=True)
class Turn:
    result: CanonicalResult
    candidate: Candidate
    credential: Credential
    server_calls: list[FunctionCallDone] = field(default_factory=list)
    client_calls: list[FunctionCallDone] = field(default_factory=list)
    visible: list[dict[str, Any]] = field(default_factory=list)  # output items the client sees (JSON answers)


def unanswered_usage(body: dict[str, Any], candidate: Candidate) -> Usage:
    """A turn sent (`body`: what went upstream) but never answered may be billed whole: its input bound and its
    whole output cap."""
    bound = token_bound(body, candidate)
    return Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens, reported=False, estimated=True)


def split_calls(output: list[dict[str, Any]], server_names: set[str]) -> Turn:
    """A result's function calls split into server-tool calls and client calls (result fields filled later)."""
    turn = Turn(result=None, candidate=None, credential=None)  # type: ignore[arg-type]
    for item in output:
        if item.get("type") != "function_call":
            turn.visible.append(item)
            continue
        call = FunctionCallDone(str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("arguments", "")))
        if call.name in server_names:
            turn.server_calls.append(call)
        else:
            turn.client_calls.append(call)
            turn.visible.append(item)
    return turn


class JsonTurns:
    """Turns answered as JSON; the client gets one response object at the end."""

    def __init__(self, ctx: Context, responder: Any) -> None:
        self.ctx = ctx
        self.responder = responder
        self.unanswered: tuple[Usage, Candidate, bool] | None = None  # a turn sent whose answer never came

    def cut_turn(self) -> tuple[Usage, Candidate, bool] | None:
        """The estimated usage of the failed turn when the provider may have billed it, else None."""
        cut, self.unanswered = self.unanswered, None
        return cut

    async def turn(self, body: dict[str, Any], candidates: list[Candidate], server_names: set[str]) -> Turn:
        self.unanswered = None

        async def attempt(call: UpstreamCall, candidate: Candidate, cred: Credential) -> Turn:
            try:
                result = await get_adapter(candidate.api_format).complete(call)
            except asyncio.CancelledError:  # the client went away while the provider worked
                self.unanswered = (unanswered_usage(call.body, candidate), candidate, cred.is_byok)
                raise
            except ProviderError as error:
                if error.maybe_billed:  # a timeout after the send, an answer cut mid-body
                    self.unanswered = (unanswered_usage(call.body, candidate), candidate, cred.is_byok)
                raise
            handler._settle(self.ctx, candidate, cred, "success")
            if self.ctx.outcome.ttft_ms is None:
                self.ctx.outcome.ttft_ms = int((time.perf_counter() - self.ctx.started) * 1000)
            turn = split_calls(result.output, server_names)
            turn.result, turn.candidate, turn.credential = result, candidate, cred
            return turn

        return await handler.call_with_fallback(self.ctx, candidates, body, False, attempt, committed=lambda: False)


class StreamTurns:
    """Turns streamed to the client as they arrive, through one LoopStream opened by the first turn."""

    def __init__(self, ctx: Context, responder: Any, sources: dict[str, str]) -> None:
        self.ctx = ctx
        self.responder = responder
        self.sources = sources  # url → title found so far (shared with the loop's state): citations
        self.writer: Any = None  # the ingress's loop writer (inference.servertools.stream.LoopStream on /responses)
        self.in_flight: tuple[dict[str, Any], Candidate, bool] | None = None  # a turn whose stream began
        self.turn_text: list[str] = []  # the text that turn streamed so far
        self.unanswered: tuple[Usage, Candidate, bool] | None = None  # a turn sent whose stream never began

    async def turn(self, body: dict[str, Any], candidates: list[Candidate], server_names: set[str]) -> Turn:
        committed = False
        self.unanswered = None

        async def attempt(call: UpstreamCall, candidate: Candidate, cred: Credential) -> Turn:
            nonlocal committed
            adapter = get_adapter(candidate.api_format)
            events = adapter.stream(call).__aiter__()
            try:
                try:
                    event = await events.__anext__()  # a failure here can still fall back
                except asyncio.CancelledError:  # the client went away while the provider worked
                    self.unanswered = (unanswered_usage(call.body, candidate), candidate, cred.is_byok)
                    raise
                except ProviderError as error:
                    if error.maybe_billed:  # no first event in time after the send, a 2xx stream unreadable
                        self.unanswered = (unanswered_usage(call.body, candidate), candidate, cred.is_byok)
                    raise
                committed = True
                self.in_flight, self.turn_text = (call.body, candidate, cred.is_byok), []
                handler._settle(self.ctx, candidate, cred, "success")
                await self._open(adapter, call, candidate, cred)
                self.writer.candidate = candidate
                turn = Turn(result=None, candidate=candidate, credential=cred)  # type: ignore[arg-type]
                seen = False
                while not isinstance(event, StreamDone):
                    seen = seen or isinstance(event, (TextDelta, FunctionCallDone))
                    await self._forward(event, turn, server_names)
                    event = await events.__anext__()
                if not seen:  # an adapter that only sent the result: stream its items now
                    for replayed in _events_of(event.result):
                        await self._forward(replayed, turn, server_names)
                turn.result = event.result
                self.in_flight = None
                return turn
            except StopAsyncIteration:
                raise ProviderError(ProviderErrorKind.SERVER, "stream ended early", before_first_event=False) from None
            finally:
                await events.aclose()

        return await handler.call_with_fallback(self.ctx, candidates, body, True, attempt, committed=lambda: committed)

    async def _open(self, adapter: Any, call: UpstreamCall, candidate: Candidate, cred: Credential) -> None:
        if self.writer is not None:
            return
        echo = (self.ctx.body.get("debug") or {}).get("echo_upstream_body")
        debug = handler._debug_body(adapter, call) if echo else None
        self.writer = ingress_of(self.ctx).loop_writer(self.ctx, self.responder, candidate, cred.is_byok)
        self.writer.sources = self.sources
        self.ctx.extras["inference.stream"] = self.writer
        await self.writer.open(debug)

    def cut_turn(self) -> tuple[Usage, Candidate, bool] | None:
        """The estimated usage of a failed turn the provider may have billed, else None: for a turn cut after its
        stream began, its input bound and the output streamed so far within its output cap (docs/budgets.md,
        "What a request is charged"); for one sent whose stream never began, its whole bound."""
        cut, self.unanswered = self.unanswered, None
        if self.in_flight is None:
            return cut
        body, candidate, is_byok = self.in_flight
        self.in_flight = None
        bound = token_bound(body, candidate)
        output = min(len("".join(self.turn_text).encode()) + OUTPUT_FRAMING_TOKENS, bound.output_tokens)
        usage = Usage(input_tokens=bound.input_tokens, output_tokens=output, reported=False, estimated=True)
        return usage, candidate, is_byok

    async def _forward(self, event: Any, turn: Turn, server_names: set[str]) -> None:
        if isinstance(event, TextDelta):
            self.turn_text.append(event.text)
        if isinstance(event, FunctionCallDelta) and event.name in server_names:
            return  # a server tool's call: the loop shows it as its own item once it runs
        if isinstance(event, FunctionCallDone):
            if event.name in server_names:
                turn.server_calls.append(event)
                return
            turn.client_calls.append(event)
        await self.writer.handle(event)


def _events_of(result: CanonicalResult) -> list[Any]:
    events: list[Any] = []
    for item in result.output:
        if item.get("type") == "message":
            text = "".join(p.get("text", "") for p in item.get("content") or () if p.get("type") == "output_text")
            if text:
                events.append(TextDelta(text))
        elif item.get("type") == "function_call":
            events.append(
                FunctionCallDone(str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("arguments")))
            )
    return events
