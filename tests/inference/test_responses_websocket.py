"""The Responses API over a WebSocket on /api/v1/responses (Codex CLI with `supports_websockets = true`): key
checked at connect, each `response.create` through the whole pipeline with its events as messages, errors as
`error` events on an open socket, `previous_response_id` within the socket, `generate: false` prewarm."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.inference.conftest import add_endpoint, generations, wait_idle
from tests.servertools.conftest import KEY_ENV, agent_catalog  # noqa: F401

MODEL = "fakechat/agent"


def socket(gateway_server, key: str | None):
    url = gateway_server.url.replace("http://", "ws://") + "/api/v1/responses"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return connect(url, additional_headers=headers, open_timeout=10)


def turn(ws, **body) -> list[dict]:
    """Send one response.create; the events until the turn's last one (completed, failed, incomplete or error)."""
    ws.send(json.dumps({"type": "response.create", **body}))
    events = []
    while True:
        event = json.loads(ws.recv(timeout=20))
        events.append(event)
        if event["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
            if event["type"] != "error" or not any(e["type"] == "response.created" for e in events):
                return events


def test_key_is_checked_at_connect(gateway_server, transactional_db):
    for key in (None, "sk-not-a-key"):
        with pytest.raises(InvalidStatus) as refused:
            socket(gateway_server, key)
        assert refused.value.response.status_code == 401
        assert "error" in json.loads(refused.value.response.body)


def test_each_message_is_one_request_streamed_and_accounted(gateway_server, org, agent_catalog):  # noqa: F811
    with socket(gateway_server, org.inference_key) as ws:
        first = turn(ws, model=MODEL, input="Hello")
        second = turn(ws, model=MODEL, input="Again", stream=False)  # always streamed
    for events in (first, second):
        kinds = [e["type"] for e in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == (
            "Hello from the fake upstream."
        )
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
    rows = generations(2)
    assert [r.id.hex for r in rows] == [
        e[-1]["response"]["id"].removeprefix("resp_").replace("-", "") for e in (first, second)
    ]
    assert all(r.streamed and r.status == "completed" for r in rows)


def test_bad_messages_are_error_events_and_the_socket_stays_open(gateway_server, org, agent_catalog):  # noqa: F811
    with socket(gateway_server, org.inference_key) as ws:
        ws.send("{not json")
        assert json.loads(ws.recv(timeout=10))["status"] == 400
        ws.send(json.dumps({"type": "session.update"}))
        assert json.loads(ws.recv(timeout=10))["error"]["message"].startswith("type:")
        refused = turn(ws, model=MODEL, input="Hello", temperature=9)
        assert refused == [{"type": "error", "status": 400, "error": refused[0]["error"]}]
        assert refused[0]["error"]["message"].startswith("temperature:")
        unknown = turn(ws, model="nope/none", input="Hello")
        assert unknown[0]["status"] == 404
        assert turn(ws, model=MODEL, input="Hello")[-1]["type"] == "response.completed"
    assert len(agent_catalog.requests) == 1


def test_previous_response_id_continues_the_sockets_last_turn(gateway_server, org, agent_catalog):  # noqa: F811
    with socket(gateway_server, org.inference_key) as ws:
        first = turn(ws, model=MODEL, instructions="Be brief.", input="Hello")
        previous = first[-1]["response"]["id"]
        second = turn(ws, model=MODEL, instructions="Be brief.", previous_response_id=previous, input="And then?")
        assert second[-1]["type"] == "response.completed"
        stale = turn(ws, model=MODEL, previous_response_id="resp_other", input="x")
        assert stale[0]["type"] == "error" and stale[0]["error"]["message"].startswith("previous_response_id:")
    sent = agent_catalog.requests[-1].body["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("system", "Be brief."),
        ("user", "Hello"),
        ("assistant", "Hello from the fake upstream."),
        ("user", "And then?"),
    ]


def test_prewarm_calls_no_model_and_charges_nothing(gateway_server, org, agent_catalog):  # noqa: F811
    from inference.models import Generation

    with socket(gateway_server, org.inference_key) as ws:
        warm = turn(ws, model=MODEL, input="Hello", generate=False)
        assert [e["type"] for e in warm] == ["response.created", "response.completed"]
        assert warm[-1]["response"]["output"] == [] and warm[-1]["response"]["usage"]["cost"] == 0
        following = turn(ws, model=MODEL, previous_response_id=warm[-1]["response"]["id"], input="Go on")
        assert following[-1]["type"] == "response.completed"
    sent = agent_catalog.requests[-1].body["messages"]
    assert [m["content"] for m in sent] == ["Hello", "Go on"]
    wait_idle()
    assert len(agent_catalog.requests) == 1 and generations(1) and Generation.objects.count() == 1


def test_policies_run_per_turn(gateway_server, api, org, agent_catalog):  # noqa: F811
    from guardrails import middleware
    from tests.guardrails.test_enforcement_e2e import key_guardrail

    middleware._policies.clear()
    with socket(gateway_server, org.inference_key) as ws:
        assert turn(ws, model=MODEL, input="Hello")[-1]["type"] == "response.completed"
        key_guardrail(api, org, allowed_models=["fakeai/agent"])
        refused = turn(ws, model=MODEL, input="Hello")
        assert refused[0]["type"] == "error" and refused[0]["status"] == 403
        assert turn(ws, model="fakeai/agent", input="Hello")[-1]["type"] == "response.completed"


def test_client_going_away_cancels_the_turn(gateway_server, org, agent_catalog):  # noqa: F811
    """A socket closed during a turn cancels its upstream call, as a disconnect does over HTTP (a `cancelled` row)."""
    from inference.routing import clear_caches

    common = {"base_url": agent_catalog.base_url, "api_key_env": KEY_ENV}
    add_endpoint("fakechat/hang", "fakechat", api_format="openai-chat", upstream_model="hang", **common)
    clear_caches()
    with socket(gateway_server, org.inference_key) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "fakechat/hang", "input": "Hello"}))
        deadline = time.monotonic() + 10
        while not agent_catalog.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert agent_catalog.requests  # the upstream has the request, and never answers
    assert asyncio.run(agent_catalog.wait_disconnected(10))
    assert generations(1)[0].status == "cancelled"
