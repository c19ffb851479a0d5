"""Fixtures of the router tests: a catalog of several models with prices, context lengths and quality scores,
all served by the fake upstream (OpenAI Responses format) under their own upstream model names."""

from __future__ import annotations

import httpx
import pytest
from openai import OpenAI

from inference.models import Model
from tests.inference.conftest import add_endpoint, generations, wait_idle  # noqa: F401  (fixtures)

KEY_ENV = "ROUTERS_FAKE_KEY"
CODE_PROMPT = "Fix the bug in this python function: def add(a, b): return a - b. Debug and refactor the code."
TRIVIA_PROMPT = "Who was the first person to walk on the moon?"
# slug: (prompt price, completion price, context length, quality scores)
MODELS = {
    "cheap/small": ("0.0000001", "0.0000002", 8000, {"default": 0.6, "programming": 0.65}),
    "mid/coder": ("0.000001", "0.000002", 8000, {"default": 0.7, "programming": 0.88}),
    "big/large": ("0.00001", "0.00002", 200000, {"default": 0.9, "programming": 0.9}),
    "trivia/sage": ("0.000002", "0.000004", 8000, {"default": 0.5, "trivia": 0.95}),
}


def upstream_of(slug: str) -> str:
    return "up-" + slug.replace("/", "-")


def set_catalog(fake_upstream, models=MODELS):
    from inference.routing import clear_caches

    clear_caches()
    base = {"base_url": fake_upstream.base_url, "api_key_env": KEY_ENV}
    for slug, (prompt, completion, context, scores) in models.items():
        add_endpoint(
            slug,
            slug.split("/")[0],
            api_format="openai-responses",
            upstream_model=upstream_of(slug),
            prompt_price=prompt,
            completion_price=completion,
            **base,
        )
        Model.objects.filter(slug=slug).update(context_length=context, quality_scores=scores)


@pytest.fixture
def router_catalog(transactional_db, fake_upstream, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fake-router")
    set_catalog(fake_upstream)
    return fake_upstream


@pytest.fixture
def client(gateway_server, org, router_catalog):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1",
        headers={"Authorization": f"Bearer {org.inference_key}", "X-Service-Metadata": "enabled"},
        timeout=30,
    ) as http:
        yield http
    wait_idle()


@pytest.fixture
def router_sdk(gateway_server, org, router_catalog):
    yield OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    wait_idle()


def stage_of(response_json: dict, name: str) -> dict:
    return next(s for s in response_json["service_metadata"]["pipeline"] if s.get("name") == name)


def ask(client, prompt: str, plugins=None, **extra):
    body = {"input": [{"role": "user", "content": prompt}], **extra}
    if plugins is not None:
        body["plugins"] = plugins
    return client.post("/responses", json=body)
