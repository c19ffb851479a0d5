"""service:web_fetch fan-out: a model turn asking for hundreds of fetches makes at most
GATEWAY_WEB_FETCH_MAX_CALLS_PER_TURN of them, a request at most GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST, and at
most GATEWAY_WEB_FETCH_CONCURRENCY run at once; the calls past a cap get an error result the model reads.
End to end through the loopback server; the fake web counts what it received."""

from __future__ import annotations

import pytest

from tests.fakes.fake_formats import Reply
from tests.fakes.fake_web import page
from tests.servertools.conftest import MODEL, text

TOOLS = [{"type": "service:web_fetch"}]


@pytest.fixture
def loopback_allowed(settings):
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1/32"]
    settings.GATEWAY_WEB_FETCH_TIMEOUT = 5.0
    return settings


def fetches(urls: list[str]) -> Reply:
    """One model turn calling web_fetch once per URL."""
    calls = [(f"call_{n}", "web_fetch", f'{{"url": "{url}"}}') for n, url in enumerate(urls)]
    first = calls[0]
    return Reply(
        tool_name="web_fetch",
        tool_call_id=first[0],
        tool_arguments=[first[2]],
        finish="tool_calls",
        more_calls=calls[1:],
    )


def test_300_calls_in_one_turn_make_at_most_the_per_turn_cap(agent, agent_catalog, fake_web, loopback_allowed):
    fake_web.pages["p"] = page("<p>a page</p>")
    urls = [f"{fake_web.url}/pages/p?n={n}" for n in range(300)]
    agent_catalog.script = [fetches(urls), text("Done.")]
    response = agent.post("/responses", json={"model": MODEL, "input": "Read them all.", "tools": TOOLS})
    assert response.status_code == 200, response.text
    items = [item for item in response.json()["output"] if item["type"] == "service:web_fetch"]
    assert len(items) == 300
    assert [item["status"] for item in items] == ["completed"] * 10 + ["failed"] * 290
    assert "at most 10 web_fetch calls per turn" in items[10]["error"]
    assert len(fake_web.requests) == 10
    outputs = [i["output"] for i in agent_catalog.requests[1].body["input"] if i["type"] == "function_call_output"]
    assert len(outputs) == 300 and outputs[299].startswith(f"Error: {urls[299]} was not fetched: at most 10")


def test_the_per_request_cap_counts_every_turn(agent, agent_catalog, fake_web, loopback_allowed):
    loopback_allowed.GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST = 15
    fake_web.pages["p"] = page("<p>a page</p>")
    first = [f"{fake_web.url}/pages/p?a={n}" for n in range(10)]
    second = [f"{fake_web.url}/pages/p?b={n}" for n in range(10)]
    agent_catalog.script = [fetches(first), fetches(second), text("Done.")]
    response = agent.post("/responses", json={"model": MODEL, "input": "Read.", "tools": TOOLS})
    assert response.status_code == 200, response.text
    items = [item for item in response.json()["output"] if item["type"] == "service:web_fetch"]
    assert [item["status"] for item in items] == ["completed"] * 15 + ["failed"] * 5
    assert "at most 15 web_fetch calls per request" in items[15]["error"]
    assert len(fake_web.requests) == 15


def test_fetches_run_at_most_the_concurrency_at_once(agent, agent_catalog, fake_web, loopback_allowed):
    loopback_allowed.GATEWAY_WEB_FETCH_CONCURRENCY = 2
    fake_web.slow_seconds = 0.3
    agent_catalog.script = [fetches([f"{fake_web.url}/slow?n={n}" for n in range(6)]), text("Done.")]
    response = agent.post("/responses", json={"model": MODEL, "input": "Read.", "tools": TOOLS})
    assert response.status_code == 200, response.text
    items = [item for item in response.json()["output"] if item["type"] == "service:web_fetch"]
    assert [item["status"] for item in items] == ["completed"] * 6
    assert len(fake_web.requests) == 6 and fake_web.most_in_flight == 2
