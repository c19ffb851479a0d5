"""The in-process `echo` provider: deterministic text, no network. For a first run and offline tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import (
    FLUSH,
    Adapter,
    CanonicalEvent,
    CanonicalResult,
    StreamDone,
    TextDelta,
    UpstreamCall,
    UpstreamRequest,
)
from inference.providers.canonical import unsupported


def _last_user_text(body: dict[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role", "user") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _words(text: str) -> list[str]:
    return text.split()


class EchoAdapter(Adapter):
    """Answers `Echo: <last user message>`, cut to `max_output_tokens` words when that is set and before the
    first word holding one of the `stop` sequences (finish `stop`); `seed` changes nothing (the answer is
    deterministic anyway); `logit_bias` is refused (there are no tokens to bias)."""

    api_format = "echo"

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        return UpstreamRequest(url="echo://local", headers={}, json={**call.body, "model": call.upstream_model})

    def _answer(self, call: UpstreamCall) -> tuple[list[str], CanonicalResult]:
        if call.body.get("logit_bias") is not None:
            raise unsupported("logit_bias")
        prompt = _last_user_text(call.body)
        words = ["Echo:", *_words(prompt)]
        stops = call.body.get("stop") or ()
        cut = next((i for i, w in enumerate(words) if any(s in w for s in stops)), None)
        if cut is not None:
            words = words[:cut]
        limit = call.body.get("max_output_tokens")
        status, reason, finish = "completed", None, "stop"
        if isinstance(limit, int) and limit < len(words):
            words = words[:limit]
            status, reason, finish = "incomplete", "max_output_tokens", "length"
        pieces = [w if i == 0 else f" {w}" for i, w in enumerate(words)]
        instructions = call.body.get("instructions") or ""
        usage = Usage(input_tokens=len(_words(prompt)) + len(_words(instructions)), output_tokens=len(words))
        item_id = f"msg_{uuid.uuid4().hex}"
        output = [
            {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}],
            }
        ]
        result = CanonicalResult(
            upstream_id=f"echo-{uuid.uuid4().hex}",
            output=output,
            usage=usage,
            status=status,
            incomplete_reason=reason,
            finish_reason=finish,
        )
        return pieces, result

    async def complete(self, call: UpstreamCall) -> CanonicalResult:
        return self._answer(call)[1]

    async def stream(self, call: UpstreamCall) -> AsyncIterator[CanonicalEvent]:
        pieces, result = self._answer(call)
        for piece in pieces:
            yield TextDelta(piece)
            yield FLUSH
        yield StreamDone(result)
