"""Fixtures of the observability tests: a fake receiver, a recorded generation and its signal."""

from __future__ import annotations

import itertools
import time
import uuid
from decimal import Decimal

import pytest
from django.utils import timezone

from inference.models import Generation, GenerationStatus
from inference.pipeline.context import Context, Outcome, Usage
from inference.signals import generation_recorded
from observability.selectors import route_cache
from tests.fakes.fake_receiver import FakeReceiver
from tests.inference.conftest import echo_catalog, http  # noqa: F401  (fixtures of the data-plane tests)

_versions = itertools.count(1_000_000)


TEST_FERNET_KEY = "x2sXdrpMfgsWkNMk8-Ru6p0s1k_7TS9ZfRZK4Ua2GTM="


@pytest.fixture(autouse=True)
def _encryption_key(settings):
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [TEST_FERNET_KEY]


@pytest.fixture(autouse=True)
def _fresh_route_cache():
    route_cache.clear()
    yield
    route_cache.clear()


@pytest.fixture
def receiver():
    fake = FakeReceiver().start()
    yield fake
    fake.stop()


def make_ctx(org, *, body=None, output_text="Hello from the model", key_hash=None, principal=None):
    from accounts.principal import load_principal

    ctx = Context(
        request_id=f"req-{uuid.uuid4().hex[:12]}",
        created_at=timezone.now(),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="gateway.test",
        headers={
            "authorization": "Bearer secret",
            "user-agent": "tests/1.0",
            "x-forwarded-for": "203.0.113.9",
            "x-session-id": "s-1",
        },
        raw_body=b"{}",
        body=body if body is not None else {"model": "openai/gpt-4o-mini", "input": "Say hello"},
        principal=principal or load_principal(key_hash or org.inference_hash),
        policy_version=next(_versions),
    )
    ctx.outcome = Outcome(
        status="completed",
        finish_reason="stop",
        usage=Usage(input_tokens=12, output_tokens=5),
        output_text=output_text,
        output=[
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": output_text, "annotations": []}],
            }
        ],
        ttft_ms=120,
        latency_ms=480,
    )
    return ctx


def record_generation(org, ctx=None, **fields) -> Generation:
    """Save a Generation and send `generation_recorded` in one transaction, as the accounting code does."""
    from django.db import transaction

    ctx = ctx or make_ctx(org, **{k: fields.pop(k) for k in ("body", "output_text", "key_hash") if k in fields})
    now = timezone.now()
    values = {
        "organization": org.organization,
        "workspace": org.workspace,
        "key_hash": ctx.principal.key_hash,
        "user_id": ctx.principal.user_id,
        "session_id": ctx.body.get("session_id", ""),
        "requested_model": ctx.body.get("model", ""),
        "model": "openai/gpt-4o-mini",
        "provider": "openai",
        "status": GenerationStatus.COMPLETED,
        "finish_reason": "stop",
        "input_tokens": 12,
        "output_tokens": 5,
        "cost": Decimal("0.0000048"),
        "latency_ms": 480,
        "ttft_ms": 120,
        "trace": ctx.body.get("trace") or {},
        "created_at": now,
        "completed_at": now,
        **fields,
    }
    with transaction.atomic():
        generation = Generation.objects.create(**values)
        generation_recorded.send(sender=Generation, generation=generation, ctx=ctx)
    return generation
