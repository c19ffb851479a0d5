"""`manage.py bench_presets [--requests N]`: time PresetMiddleware on the hot path (preset cached, no I/O)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import orjson
from django.core.management.base import BaseCommand

from accounts.principal import Principal
from inference.pipeline.context import Context
from presets.middleware import PresetMiddleware, _presets
from presets.selectors import PresetSnapshot

FIELDS = {
    "model": "openai/gpt-4o-mini",
    "temperature": 0.2,
    "max_output_tokens": 300,
    "provider": {"order": ["openai"], "allow_fallbacks": True},
    "reasoning": {"effort": "low"},
}


async def _noop(ctx: Context) -> None:
    return None


def _principal() -> Principal:
    return Principal(
        key_id=uuid.uuid4(),
        key_hash="0" * 64,
        key_name="bench",
        organization_id=uuid.uuid4(),
        workspace_id=uuid.uuid4(),
        user_id=None,
        is_management=False,
        disabled=False,
        expires_at=None,
        limit=None,
        limit_reset=None,
        include_byok_in_limit=False,
    )


def _context(principal: Principal, model: str) -> Context:
    return Context(
        request_id="bench",
        created_at=datetime.now(UTC),
        started=0.0,
        method="POST",
        path="/api/v1/responses",
        host="localhost",
        headers={},
        raw_body=b"",
        body={"model": model, "input": "hi", "temperature": 0.9},
        principal=principal,
        policy_version=-1,
    )


async def _time(handler, principal: Principal, model: str, requests: int) -> float:
    started = time.perf_counter()
    for _ in range(requests):
        await handler(_context(principal, model))
    return (time.perf_counter() - started) / requests * 1e6


async def _run(requests: int) -> list[tuple[str, float]]:
    principal = _principal()
    snapshot = PresetSnapshot(
        id=uuid.uuid4(),
        slug="bench",
        status="active",
        version_id=uuid.uuid4(),
        version=1,
        fields_json=orjson.dumps(FIELDS),
        model=FIELDS["model"],
        system_prompt="Be terse.",
    )

    async def load() -> PresetSnapshot:
        return snapshot

    await _presets.get(-1, (principal.organization_id, "bench"), load)
    middleware = PresetMiddleware(_noop)
    rows = []
    for label, model in (("@preset/<slug> request", "@preset/bench"), ("plain request", FIELDS["model"])):
        base = await _time(_noop, principal, model, requests)
        rows.append((label, await _time(middleware, principal, model, requests) - base))
    _presets.clear()
    return rows


class Command(BaseCommand):
    help = "Time PresetMiddleware with the preset cached: microseconds added per request."

    def add_arguments(self, parser):
        parser.add_argument("--requests", type=int, default=50_000)

    def handle(self, *args, requests: int, **options):
        for label, added in asyncio.run(_run(requests)):
            self.stdout.write(f"{label}: {added:.2f} us added per request")
