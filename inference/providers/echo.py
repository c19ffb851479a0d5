"""The in-process `echo` provider: deterministic answers, no network. For a first run and offline tests.

It answers as a model that honours tools and structured output would, so a client's tool loop or structured
output works offline (inference.providers.echo_turn reads the request, echo_values fills a JSON schema):

- plain text: `Echo: <last user message>`; after tool results (and no further tool call), `Echo:` followed by
  each tool's name and what it returned;
- with function `tools` (and `tool_choice` none / auto / required / a named function honoured): a call to one
  tool, its arguments valid against the tool's `parameters`, derived from the tool results when there are
  some (a tool called with what the previous one returned), else from the last user message;
- with `text.format` json_schema: a JSON answer valid against the schema, derived from the tool results when
  there are some, else from the last user message; json_object: the same for a JSON schema the prompt holds
  (JSON-mode clients write it there), else `{"echo": "<last user message>"}`.

A text or JSON answer is cut to `max_output_tokens` words when that is set (finish `length`); a plain text
answer also before the first word holding one of the `stop` sequences. `seed` changes nothing (the answer is
deterministic anyway); `logit_bias` is refused (there are no tokens to bias). Usage counts words as tokens:
input is the last user message, the instructions, the tool results read and the schema or tools followed;
output is the words of the answer or of the call's arguments.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import (
    FLUSH,
    Adapter,
    CanonicalEvent,
    CanonicalResult,
    FunctionCallDone,
    StreamDone,
    TextDelta,
    UpstreamCall,
    UpstreamRequest,
)
from inference.providers.canonical import function_call_item, message_item, unsupported
from inference.providers.echo_turn import Turn, answer_schema, read_turn, tool_to_call
from inference.providers.echo_values import SchemaFiller

PIECE = re.compile(r"\s*\S+")


def _words(text: str) -> list[str]:
    return text.split()


def _pieces(text: str) -> list[str]:
    """The text in streamed pieces, one word each with the space before it (they join back to the text)."""
    return PIECE.findall(text)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class EchoAdapter(Adapter):
    """See the module docstring."""

    api_format = "echo"

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        return UpstreamRequest(url="echo://local", headers={}, json={**call.body, "model": call.upstream_model})

    def _answer(self, call: UpstreamCall) -> tuple[list[str], FunctionCallDone | None, CanonicalResult]:
        body = call.body
        if body.get("logit_bias") is not None:
            raise unsupported("logit_bias")
        turn = read_turn(body)
        read = len(_words(turn.prompt)) + len(_words(body.get("instructions") or ""))
        read += sum(len(_words(output)) for _, output in turn.results)
        tool = tool_to_call(body, turn)
        if tool is not None:
            return self._call(body, turn, tool, read)
        as_json, schema = answer_schema(body, turn)
        if as_json:
            source = " ".join(output for _, output in turn.results) or turn.prompt
            value = SchemaFiller(schema, source).fill() if schema is not None else {"echo": source}
            pieces, stops = _pieces(_json(value)), ()
            read += len(_words(_json(schema))) if schema else 0
        else:
            said = " ".join(f"{name} returned {output}" for name, output in turn.results) or turn.prompt
            words = ["Echo:", *_words(said)]
            pieces, stops = [w if i == 0 else f" {w}" for i, w in enumerate(words)], body.get("stop") or ()
        return self._text(body, pieces, stops, read)

    def _call(
        self, body: dict[str, Any], turn: Turn, tool: dict[str, Any], read: int
    ) -> tuple[list[str], FunctionCallDone, CanonicalResult]:
        parameters = tool.get("parameters")
        source = " ".join(output for _, output in turn.results) or turn.prompt
        arguments = _json(SchemaFiller(parameters, source).fill() if parameters else {})
        read += len(_words(_json(body.get("tools"))))
        call = FunctionCallDone(f"call_{uuid.uuid4().hex[:24]}", str(tool["name"]), arguments)
        usage = Usage(input_tokens=read, output_tokens=len(_pieces(arguments)))
        output = [function_call_item(call.call_id, call.name, call.arguments)]
        return [], call, CanonicalResult(f"echo-{uuid.uuid4().hex}", output, usage, finish_reason="tool_calls")

    def _text(
        self, body: dict[str, Any], pieces: list[str], stops: Any, read: int
    ) -> tuple[list[str], None, CanonicalResult]:
        cut = next((i for i, p in enumerate(pieces) if any(s in p for s in stops)), None)
        if cut is not None:
            pieces = pieces[:cut]
        limit = body.get("max_output_tokens")
        status, reason, finish = "completed", None, "stop"
        if isinstance(limit, int) and limit < len(pieces):
            pieces = pieces[:limit]
            status, reason, finish = "incomplete", "max_output_tokens", "length"
        pieces = [p.strip() if i == 0 else p for i, p in enumerate(pieces)]
        usage = Usage(input_tokens=read, output_tokens=len(pieces))
        result = CanonicalResult(
            upstream_id=f"echo-{uuid.uuid4().hex}",
            output=[
                {**message_item(""), "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}]}
            ],
            usage=usage,
            status=status,
            incomplete_reason=reason,
            finish_reason=finish,
        )
        return pieces, None, result

    async def complete(self, call: UpstreamCall) -> CanonicalResult:
        if call.gate is not None:  # the admission checks: nothing answers before they passed
            await call.gate()
        return self._answer(call)[2]

    async def stream(self, call: UpstreamCall) -> AsyncIterator[CanonicalEvent]:
        if call.gate is not None:  # before the first event
            await call.gate()
        pieces, function_call, result = self._answer(call)
        for piece in pieces:
            yield TextDelta(piece)
            yield FLUSH
        if function_call is not None:
            yield function_call
            yield FLUSH
        yield StreamDone(result)
