"""A finished request leaves no reference cycle: its Context and everything hanging off it (body, outcome,
responder, stream writer, holds) are freed by reference counting when the request ends, not by Python's cyclic
collector. Garbage in cycles costs CPU on every request (the collector walks it: about a tenth of a request's
CPU at 16 connections when each request left one) and pauses every request in flight while a collection runs.

Requests of every wire format, JSON and streamed, through the loopback server with a workspace budget and
rate limits on the key, and the answers that end otherwise (a validation error, an upstream failure with and
without a fallback, a 402, a 429); the collector is
told to keep what it finds (`gc.DEBUG_SAVEALL`) and the test looks for the gateway's request objects in it.
"""

from __future__ import annotations

import gc

import httpx
import pytest

from tests.inference.conftest import add_endpoint, wait_idle

KEY = "sk-platform-cycles-0123456789"
BODIES = {
    "/responses": lambda model, stream: {"model": model, "input": "hi", "stream": stream},
    "/chat/completions": lambda model, stream: {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    },
    "/messages": lambda model, stream: {
        "model": model,
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    },
}
# The pipeline's per-request objects: any of them in the collector's garbage means a request left a cycle.
REQUEST_TYPES = (
    "gateway_project.pipeline.Context",
    "gateway_project.pipeline.Outcome",
    "inference.consumers.Responder",
    "operations.measure.Finished",
    "inference.streaming.ResponseStream",
)


@pytest.fixture
def client(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    from inference.routing import clear_caches

    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)
    add_endpoint(
        "fake/cycles",
        "fake-chat",
        api_format="openai-chat",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_PROVIDER_KEY",
        upstream_model="cycles",
    )
    add_endpoint(
        "fake/fail-500",
        "fake-chat",
        api_format="openai-chat",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_PROVIDER_KEY",
        upstream_model="fail-500",
    )
    add_endpoint("echo/echo-1", "echo")
    clear_caches()
    api = org.client()
    assert api.put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 100}, format="json"
    ).status_code in (200, 201)
    assert (
        api.patch(
            f"/api/v1/keys/{org.inference_hash}",
            {"requests_per_minute": 1000, "tokens_per_minute": 10_000_000},
            format="json",
        ).status_code
        == 200
    )
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as http:
        yield http, api, org
    wait_idle()


def _send_everything(http) -> None:
    for path, body in BODIES.items():
        for model in ("fake/cycles", "echo/echo-1"):
            for stream in (False, True):
                response = http.post(path, json=body(model, stream))
                assert response.status_code == 200, (path, model, stream, response.text)
                response.read()
        refused = http.post(path, json={**body("fake/cycles", False), "temperature": 9})
        assert refused.status_code == 400, refused.text


def _cycle(start, garbage: list) -> str:
    """The path of references from `start` back to itself through `garbage` (the failure message)."""
    inside = {id(obj) for obj in garbage}
    previous = {id(start): None}
    queue = [start]
    while queue:
        obj = queue.pop(0)
        for ref in gc.get_referents(obj):
            if ref is start:
                path = [obj]
                while previous[id(path[-1])] is not None:
                    path.append(previous[id(path[-1])])
                return " -> ".join(type(o).__qualname__ for o in [*reversed(path), start])
            if id(ref) in inside and id(ref) not in previous:
                previous[id(ref)] = obj
                queue.append(ref)
    return f"{type(start).__qualname__} (reached from a cycle)"


def _request_garbage(run) -> dict[str, str]:
    """The pipeline's request objects the cyclic collector finds after `run()` and the requests'
    after-response work ended, each type with one cycle it is in."""
    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        wait_idle()
        gc.collect()
        found: dict[str, str] = {}
        for obj in gc.garbage:
            name = f"{type(obj).__module__}.{type(obj).__qualname__}"
            if name in REQUEST_TYPES and name not in found:
                found[name] = _cycle(obj, gc.garbage)
        return found
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_answered_requests_leave_no_cycle(client):
    http, _, _ = client
    _send_everything(http)  # warm: catalog, policies, pooled upstream connections
    assert _request_garbage(lambda: _send_everything(http)) == {}


def test_failed_upstream_calls_leave_no_cycle(client):
    http, _, _ = client

    def fail() -> None:
        for stream in (False, True):
            failed = http.post("/responses", json={"model": "fake/fail-500", "input": "hi", "stream": stream})
            assert failed.status_code == 502, failed.text
            rescued = http.post(
                "/responses", json={"models": ["fake/fail-500", "fake/cycles"], "input": "hi", "stream": stream}
            )
            assert rescued.status_code == 200, rescued.text
            rescued.read()

    fail()
    assert _request_garbage(fail) == {}


def test_refused_requests_leave_no_cycle(client):
    http, api, org = client
    body = BODIES["/responses"]("fake/cycles", False)
    assert http.post("/responses", json=body).status_code == 200

    def refuse_on_budget() -> None:
        put = api.put(f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 0.001}, format="json")
        assert put.status_code == 200, put.content  # below any request's hold (its output cap at the price)
        for stream in (False, True):
            response = http.post("/responses", json={**body, "stream": stream})
            assert response.status_code == 402, response.text

    assert _request_garbage(refuse_on_budget) == {}
    put = api.put(f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 100}, format="json")
    assert put.status_code == 200, put.content
    patch = api.patch(f"/api/v1/keys/{org.inference_hash}", {"requests_per_minute": 1}, format="json")
    assert patch.status_code == 200, patch.content

    def refuse_on_rate() -> None:
        statuses = [http.post("/responses", json={**body, "stream": stream}).status_code for stream in (False, True)]
        assert 429 in statuses, statuses

    assert _request_garbage(refuse_on_rate) == {}
