"""Fixtures of the server-tool tests: the data-plane fixtures of tests/inference, a catalog model served by the
fake upstream (OpenAI Responses format), and the fake web as the search engine."""

from __future__ import annotations

import httpx
import pytest
from openai import OpenAI

from tests.fakes.fake_formats import Reply
from tests.inference.conftest import add_endpoint, echo_catalog, http, sdk, wait_idle  # noqa: F401  (fixtures)

KEY_ENV = "SERVERTOOLS_FAKE_KEY"
MODEL = "fakeai/agent"


@pytest.fixture
def agent_catalog(transactional_db, fake_upstream, monkeypatch):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv(KEY_ENV, "sk-fake-agent")
    base = {"base_url": fake_upstream.base_url, "api_key_env": KEY_ENV}
    add_endpoint(MODEL, "fakeai", api_format="openai-responses", upstream_model="up-agent", **base)
    add_endpoint("fakechat/agent", "fakechat", api_format="openai-chat", upstream_model="up-chat-agent", **base)
    add_endpoint("fakeclaude/agent", "fakeclaude", api_format="anthropic-messages", upstream_model="up-claude", **base)
    return fake_upstream


@pytest.fixture
def searxng(settings, fake_web):
    settings.GATEWAY_SEARXNG_URL = fake_web.url
    settings.GATEWAY_BRAVE_SEARCH_API_KEY = ""
    settings.GATEWAY_TAVILY_API_KEY = ""
    settings.GATEWAY_WEB_SEARCH_ENGINE = ""
    settings.GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES = {}
    return fake_web


@pytest.fixture
def agent(gateway_server, org, agent_catalog):
    """A raw HTTP client with the inference key (status codes, bodies, SSE)."""
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as client:
        yield client
    wait_idle()


@pytest.fixture
def agent_sdk(gateway_server, org, agent_catalog):
    yield OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    wait_idle()


def call(name: str, arguments: str, call_id: str = "call_1") -> Reply:
    """A scripted turn in which the model calls `name`."""
    return Reply(tool_name=name, tool_call_id=call_id, tool_arguments=[arguments], finish="tool_calls")


def text(*pieces: str) -> Reply:
    return Reply(pieces=list(pieces))
