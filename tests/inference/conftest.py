"""Fixtures of the data-plane tests: a catalog with the in-process echo provider, SDK and raw clients."""

from __future__ import annotations

import time
from decimal import Decimal

import httpx
import pytest
from openai import OpenAI

from inference.models import Endpoint, Model, Provider


def add_endpoint(
    model_slug: str,
    provider_slug: str,
    *,
    api_format: str = "echo",
    base_url: str = "",
    api_key_env: str = "",
    prompt_price: str = "0.000001",
    completion_price: str = "0.000002",
    upstream_model: str | None = None,
    **provider_fields,
) -> Endpoint:
    """A catalog row (provider, model and endpoint), created when missing."""
    provider, _ = Provider.objects.get_or_create(
        slug=provider_slug,
        defaults={
            "name": provider_slug.title(),
            "api_format": api_format,
            "base_url": base_url,
            "api_key_env": api_key_env,
            "regions": ["global", "us", "europe"],
            **provider_fields,
        },
    )
    model, _ = Model.objects.get_or_create(
        slug=model_slug,
        defaults={
            "canonical_slug": f"{model_slug}-2026",
            "vendor": model_slug.split("/")[0],
            "context_length": 8000,
            "input_modalities": ["text"],
            "output_modalities": ["text"],
        },
    )
    endpoint, _ = Endpoint.objects.get_or_create(
        model=model,
        provider=provider,
        defaults={
            "upstream_model": upstream_model or model_slug.split("/")[-1],
            "prompt_price": Decimal(prompt_price),
            "completion_price": Decimal(completion_price),
        },
    )
    return endpoint


@pytest.fixture
def echo_catalog(transactional_db):
    from inference.routing import clear_caches

    clear_caches()  # the test database is flushed between tests, which resets the policy version
    return add_endpoint("echo/echo-1", "echo")


@pytest.fixture
def sdk(gateway_server, org, echo_catalog):
    """The official OpenAI SDK, unmodified, pointed at the loopback gateway with an inference key."""
    yield OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    wait_idle()


@pytest.fixture
def http(gateway_server, org, echo_catalog):
    """A raw HTTP client with the inference key, for status codes, headers and envelopes."""
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as client:
        yield client
    wait_idle()


def wait_idle(timeout: float = 10.0) -> None:
    """Wait until the gateway finished every request, accounting and the after-response work (metrics, the
    audit record of a refusal) included: both run after the answer went out."""
    from inference.consumers import responses_consumer
    from operations.measure import active

    deadline = time.monotonic() + timeout
    while (responses_consumer.active or active.count) and time.monotonic() < deadline:
        time.sleep(0.005)


def generations(expected: int = 1, timeout: float = 10.0) -> list:
    """The Generation rows once `expected` of them exist (they are written after the response went out)."""
    from django.db import OperationalError

    from inference.models import Generation

    deadline = time.monotonic() + timeout
    while True:
        wait_idle()
        try:
            rows = list(Generation.objects.order_by("created_at"))
        except OperationalError:  # SQLite: the server thread is writing
            rows = []
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.01)


@pytest.fixture(scope="session", autouse=True)
def _close_accounting_writer(django_db_setup):
    """Release the accounting writer's database connection before the test database is dropped."""
    yield
    from inference.recorder import shutdown

    shutdown()
