"""CPU cost of each ingress adapter per request, in process (no network, no database): the request translation
(`Ingress.parse`), the JSON answer (`json_answer`) and a streamed answer (writer: open, 20 text deltas each
followed by a Flush, the final result), for /responses, /chat/completions and /messages.

    .venv/bin/python bench/ingress_cost.py [rounds]

Prints microseconds per request (best of 5 runs, so a busy machine inflates the figures less) and the
difference from /responses: the per-request work a wire format adds to the shared pipeline.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key-0123456789abcdefghijklmnop")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
django.setup()

import orjson  # noqa: E402

from inference.ingress import CHAT, MESSAGES, RESPONSES  # noqa: E402
from inference.pipeline.context import Candidate, Context, Usage  # noqa: E402
from inference.providers.base import FLUSH, CanonicalResult, StreamDone, TextDelta  # noqa: E402
from inference.providers.canonical import build_output  # noqa: E402

PIECES = [f"piece {i} " for i in range(20)]
BODIES = {
    "responses": (RESPONSES, {"model": "bench/fake", "input": "Say hello", "max_output_tokens": 100}),
    "responses+": (  # an agent's turn: tools, reasoning, text format, metadata, include (the validation's cost)
        RESPONSES,
        {
            "model": "bench/fake",
            "instructions": "You are a coding agent.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "List the files"}]},
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.py b.py"},
            ],
            "tools": [
                {"type": "function", "name": "shell", "parameters": {"type": "object"}, "strict": False},
                {"type": "function", "name": "apply_patch", "description": "Edit files", "parameters": {}},
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "text": {"verbosity": "low"},
            "include": ["reasoning.encrypted_content"],
            "store": False,
            "stream": False,
            "prompt_cache_key": "session-1",
            "metadata": {"turn": "1"},
            "max_output_tokens": 100,
            "temperature": 0.5,
        },
    ),
    "chat": (
        CHAT,
        {"model": "bench/fake", "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 100},
    ),
    "messages": (
        MESSAGES,
        {"model": "bench/fake", "max_tokens": 100, "messages": [{"role": "user", "content": "Say hello"}]},
    ),
}
CANDIDATE = Candidate(
    endpoint_id=uuid.uuid4(),
    model_slug="bench/fake",
    canonical_slug="bench/fake-1",
    vendor="bench",
    public=True,
    provider_slug="bench-upstream",
    provider_name="Bench",
    api_format="openai-responses",
    base_url="http://127.0.0.1/v1",
    platform_key_env="",
    upstream_model="fake-model",
    prompt_price=Decimal("0.000001"),
    completion_price=Decimal("0.000002"),
    cached_prompt_price=None,
    is_free=False,
    context_length=8000,
    max_output_tokens=None,
    supported_parameters=(),
    zdr=False,
    trains_on_data=False,
    publishes_prompts=False,
    regions=("global",),
    input_modalities=("text",),
    output_modalities=("text",),
)
RESULT = CanonicalResult(
    upstream_id="resp_1", output=build_output("".join(PIECES), []), usage=Usage(12, 20, 4, 0), finish_reason="stop"
)


class NullResponder:
    started = complete = False

    async def start(self, status, headers):
        self.started = True

    async def body(self, data, more=False):
        self.complete = not more


def context(ingress, body) -> Context:
    return Context(
        request_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/",
        host="",
        headers={},
        raw_body=b"",
        body=body,
        ingress=ingress,
        ingress_format=ingress.name,
    )


async def stream_once(ingress, body) -> None:
    ctx = context(ingress, {**body, "stream": True})
    writer = ingress.stream_writer(ctx, NullResponder(), CANDIDATE, False)
    await writer.open(None)
    for piece in PIECES:
        await writer.handle(TextDelta(piece))
        await writer.handle(FLUSH)
    await writer.handle(StreamDone(RESULT))


def best_of(runs: int, rounds: int, work) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(rounds):
            work()
        best = min(best, (time.perf_counter() - started) / rounds * 1e6)
    return best


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    loop = asyncio.new_event_loop()
    figures: dict[str, tuple[float, float, float]] = {}
    for name, (ingress, body) in BODIES.items():
        raw = orjson.dumps(body)
        parse = best_of(5, rounds, lambda ingress=ingress, raw=raw: ingress.parse(raw, {}))
        canonical = ingress.parse(raw, {})
        answer = best_of(
            5, rounds, lambda i=ingress, b=canonical: i.json_answer(context(i, b), RESULT, CANDIDATE, False)
        )
        stream = best_of(5, rounds // 4, lambda i=ingress, b=canonical: loop.run_until_complete(stream_once(i, b)))
        figures[name] = (parse, answer, stream)
    print(f"{'ingress':<10} {'parse us':>9} {'JSON answer us':>15} {'stream (20 deltas) us':>22}")
    base = figures["responses"]
    for name, values in figures.items():
        diffs = (
            ""
            if name == "responses"
            else "   vs /responses: " + " / ".join(f"{v - b:+.1f}" for v, b in zip(values, base, strict=True))
        )
        print(f"{name:<10} {values[0]:>9.1f} {values[1]:>15.1f} {values[2]:>22.1f}{diffs}")


if __name__ == "__main__":
    main()
