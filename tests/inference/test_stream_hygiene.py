"""Streaming hygiene of every SSE endpoint (keep-alive comments while the upstream is silent, also before it
answered, with fallback still possible) and CORS for browser clients (preflight, allowed origins only)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fakes.fake_formats import Reply
from tests.inference.conftest import add_endpoint, generations, wait_idle

KEY = "sk-platform-hygiene-0123456789"
BODIES = {
    "/responses": lambda model: {"model": model, "input": "hi", "stream": True},
    "/chat/completions": lambda model: {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    },
    "/messages": lambda model: {
        "model": model,
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    },
}


@pytest.fixture
def raw(gateway_server, org, fake_upstream, transactional_db, monkeypatch, settings):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)
    settings.GATEWAY_SSE_KEEPALIVE_SECONDS = 0.15

    def add(upstream_model: str) -> str:
        slug = f"fake/{upstream_model}"
        add_endpoint(
            slug,
            "fake-chat",
            api_format="openai-chat",
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=upstream_model,
        )
        clear_caches()
        return slug

    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as client:
        yield client, add
    wait_idle()


@pytest.mark.parametrize("path", list(BODIES))
def test_keep_alive_comments_while_the_upstream_is_silent(raw, path):
    client, add = raw
    model = add("slow-first-byte-700")
    response = client.post(path, json=BODIES[path](model))
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in response.text.split("\n\n") if f]
    assert frames[0] == ": keep-alive" and frames.count(": keep-alive") >= 2
    first_event = next(i for i, f in enumerate(frames) if not f.startswith(":"))
    assert all(f == ": keep-alive" for f in frames[:first_event])
    assert "fake upstream" in response.text or "fake" in response.text
    (row,) = generations(1)
    assert row.status == "completed" and row.ttft_ms >= 600


def test_fallback_still_works_after_keep_alive_started_the_stream(raw, settings, fake_upstream):
    # The first model answers 503 (overloaded) after 0.6 s, when keep-alive comments went out already: the next
    # model still answers. (A model with no head or first event in time is not re-sent: its provider had the
    # request and may bill it; test_failure_after_keep_alive_is_the_formats_in_stream_error.)
    client, add = raw
    fake_upstream.model_scripts["slow-first-byte-600"] = [Reply(fail_status=503)]
    failing, healthy = add("slow-first-byte-600"), add("fake-model")
    body = {"models": [failing, healthy], "messages": [{"role": "user", "content": "hi"}], "stream": True}
    response = client.post("/chat/completions", json=body)
    frames = [f for f in response.text.split("\n\n") if f]
    assert frames[0] == ": keep-alive" and frames[-1] == "data: [DONE]"
    chunks = [json.loads(f[6:]) for f in frames if f.startswith("data: {")]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == (
        "Hello from the fake upstream."
    )
    assert chunks[0]["model"] == healthy
    (row,) = generations(1)
    assert row.status == "completed" and row.model == healthy


@pytest.mark.parametrize(
    ("path", "check"),
    [
        ("/chat/completions", lambda text: '"error":{"code":524' in text and text.endswith("data: [DONE]\n\n")),
        ("/messages", lambda text: "event: error" in text and '"type":"timeout_error"' in text),
        ("/responses", lambda text: "event: error" in text and '"code":524' in text),
    ],
)
def test_failure_after_keep_alive_is_the_formats_in_stream_error(raw, settings, path, check):
    client, add = raw
    settings.GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT = 0.5
    response = client.post(path, json=BODIES[path](add("hang")))
    assert response.status_code == 200 and response.text.startswith(": keep-alive\n\n")
    assert check(response.text), response.text
    (row,) = generations(1)
    assert row.status == "failed" and row.error_code == 524


def test_keep_alive_off_with_zero(raw, settings):
    client, add = raw
    settings.GATEWAY_SSE_KEEPALIVE_SECONDS = 0
    response = client.post("/chat/completions", json=BODIES["/chat/completions"](add("slow-first-byte-400")))
    assert ": keep-alive" not in response.text and response.text.endswith("data: [DONE]\n\n")


def test_no_cors_by_default(gateway_server):
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=10) as client:
        preflight = client.options(
            "/chat/completions",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
        )
    assert preflight.status_code == 204 and "access-control-allow-origin" not in preflight.headers
    assert preflight.headers["allow"] == "POST, OPTIONS"


@pytest.mark.parametrize("path", list(BODIES))
def test_cors_for_an_allowed_origin(gateway_server, org, echo_catalog, settings, path):
    settings.GATEWAY_CORS_ALLOWED_ORIGINS = ["https://app.example"]
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=10) as client:
        preflight = client.options(
            path,
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, x-api-key",
            },
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert preflight.headers["access-control-allow-methods"] == "POST, OPTIONS"
        assert preflight.headers["access-control-allow-headers"] == "authorization, content-type, x-api-key"
        assert preflight.headers["vary"] == "Origin"
        body = {**BODIES[path]("echo/echo-1"), "stream": False}
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        allowed = client.post(path, json=body, headers={**headers, "Origin": "https://app.example"})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-request-id" in allowed.headers["access-control-expose-headers"]
        other = client.post(path, json=body, headers={**headers, "Origin": "https://evil.example"})
        assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
        refused = client.post(path, json=body, headers={"Origin": "https://app.example"})  # no key: 401, still CORS
        assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://app.example"
    wait_idle()
