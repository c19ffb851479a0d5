"""Fixtures of the response-cache tests: a model on the fake OpenAI-chat upstream, the official SDKs on the gateway."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from openai import OpenAI

from tests.inference.conftest import add_endpoint, wait_idle

KEY = "sk-platform-cache-0123456789"
MODEL = "fake/cache-model"
OTHER_MODEL = "fake/cache-other"
TOOL_MODEL = "fake/tool-call"  # the fake upstream answers this model with a function call


@pytest.fixture(autouse=True)
def _redis_health():
    """Every test starts with Redis (when configured) considered healthy."""
    from responsecache.store import redis_health

    redis_health.reset()
    yield
    redis_health.reset()


@pytest.fixture
def upstream(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    """The fake upstream, with MODEL, OTHER_MODEL and TOOL_MODEL served by an OpenAI-chat provider on it."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)
    for slug in (MODEL, OTHER_MODEL, TOOL_MODEL):
        add_endpoint(
            slug,
            "fake-chat",
            api_format="openai-chat",
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=slug.split("/")[-1],
        )
    clear_caches()
    yield fake_upstream
    wait_idle()


@pytest.fixture
def oai(gateway_server, org, upstream) -> OpenAI:
    return OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)


@pytest.fixture
def claude(gateway_server, org, upstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)


@pytest.fixture
def mgmt(gateway_server, org):
    """A raw HTTP client with the management key (the management SDK does not know the cache endpoints)."""
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.management_key}"}, timeout=30
    ) as client:
        yield client
