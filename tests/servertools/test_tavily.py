"""The Tavily search engine: service:web_search and the `web` plugin against the fake web speaking Tavily's JSON
API (POST /search with a bearer key), through the loopback gateway."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, call, text

CITED = "Sunny, per [weather.example.com](https://weather.example.com/paris)."


@pytest.fixture
def tavily(settings, searxng):
    settings.GATEWAY_TAVILY_API_KEY = searxng.tavily_key
    settings.GATEWAY_TAVILY_SEARCH_URL = f"{searxng.url}/tavily/search"
    settings.GATEWAY_TAVILY_PRICE_PER_QUERY = "0.008"
    return searxng


def test_web_search_tool_on_tavily(agent, agent_catalog, tavily):
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text(CITED)]
    tool = {"type": "service:web_search", "parameters": {"engine": "tavily", "max_results": 2}}
    response = agent.post("/responses", json={"model": MODEL, "input": "Weather?", "tools": [tool]})
    assert response.status_code == 200, response.text
    path, body, headers = tavily.requests[-1]
    assert path == "/tavily/search" and headers["authorization"] == f"Bearer {tavily.tavily_key}"
    assert body == {"query": "paris weather", "max_results": 2, "search_depth": "basic", "topic": "general"}
    data = response.json()
    item = data["output"][0]
    assert item["engine"] == "tavily" and item["status"] == "completed"
    assert [s["url"] for s in item["action"]["sources"]] == [r["url"] for r in tavily.results[:2]]
    assert "Sunny, 21 °C." in item["output"]  # Tavily's `content` extract is what the model reads
    assert data["output"][1]["content"][0]["annotations"][0]["url"] == "https://weather.example.com/paris"
    # 2 turns of 12 in + 3 out tokens (18e-6 each), plus the price of the query
    assert Decimal(str(data["usage"]["cost"])) == Decimal("0.008036")
    [row] = generations(1)
    assert row.cost == Decimal("0.008036")


def test_tavily_chosen_by_default_setting_for_the_web_plugin(agent, agent_catalog, tavily, settings):
    settings.GATEWAY_WEB_SEARCH_ENGINE = "tavily"
    agent_catalog.script = [text(CITED)]
    body = {"model": MODEL, "input": "Weather in Paris?", "plugins": [{"id": "web", "max_results": 1}]}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    assert tavily.searches() == ["Weather in Paris?"]
    system = agent_catalog.requests[0].body["input"][0]["content"]
    assert "(tavily," in system and "https://weather.example.com/paris" in system and "meteo" not in system


def test_a_refused_key_is_a_failed_search_the_model_is_told_about(agent, agent_catalog, tavily, settings):
    settings.GATEWAY_TAVILY_API_KEY = "tvly-wrong"
    agent_catalog.script = [call("web_search", '{"query": "paris"}'), text("I could not search.")]
    tool = {"type": "service:web_search", "parameters": {"engine": "tavily"}}
    response = agent.post("/responses", json={"model": MODEL, "input": "Weather?", "tools": [tool]})
    assert response.status_code == 200, response.text
    item = response.json()["output"][0]
    assert item["status"] == "failed" and "tavily answered HTTP 401" in item["output"]
    assert "tavily answered HTTP 401" in agent_catalog.requests[1].body["input"][-1]["output"]
