"""Fixtures of the analytics tests: the echo catalog and a failing fake endpoint, OpenAI SDK with the inference key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from openai import OpenAI

from tests.inference.conftest import (  # noqa: F401  (fixtures)
    _close_accounting_writer,
    add_endpoint,
    echo_catalog,
    wait_idle,
)

FAKE_KEY = "sk-fake-provider-analytics-0123456789"


@pytest.fixture
def failing_model(request, fake_upstream, monkeypatch):
    """`fake/broken`: a catalog model whose only endpoint answers 500 (its requests are `failed` generations)."""
    from inference.routing import clear_caches

    request.getfixturevalue("echo_catalog")
    monkeypatch.setenv("FAKE_PROVIDER_KEY", FAKE_KEY)
    add_endpoint(
        "fake/broken",
        "fake-broken",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_PROVIDER_KEY",
        upstream_model="fail-500",
    )
    clear_caches()
    return "fake/broken"


@pytest.fixture
def openai_sdk(request, gateway_server, org):
    request.getfixturevalue("echo_catalog")
    yield OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    wait_idle()


def make_generation(org, *, at: datetime, model: str = "demo/a", latency_ms: int | None = 100, **fields):
    """A Generation row written through the accounting path (so its rollups are kept as in production)."""
    import uuid

    from analytics.rollup import rollup_generations
    from inference.models import Generation

    row = Generation(
        id=uuid.uuid4(),
        organization=org.organization,
        workspace=org.workspace,
        key_hash=fields.pop("key_hash", org.inference_hash),
        model=model,
        provider=fields.pop("provider", "demo"),
        status=fields.pop("status", "completed"),
        input_tokens=fields.pop("input_tokens", 10),
        output_tokens=fields.pop("output_tokens", 5),
        cost=fields.pop("cost", Decimal("0.001")),
        latency_ms=latency_ms,
        created_at=at,
        **fields,
    )
    row.save()
    rollup_generations([row])
    return row


def hour(days_ago: int = 0, hours: int = 0) -> datetime:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return now - timedelta(days=days_ago, hours=hours)
