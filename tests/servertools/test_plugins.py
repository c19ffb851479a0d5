"""The `web` and `web-fetch` plugins end to end: what the upstream receives, citations, metadata, cost, 400s."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.fakes.fake_web import page
from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, text
from tests.servertools.test_web_fetch import ARTICLE
from tests.servertools.test_web_search import sse

CITED = "Sunny per [weather.example.com](https://weather.example.com/paris)."


def post(agent, plugins, **extra):
    body = {"model": MODEL, "input": [{"role": "user", "content": "What is the weather in Paris today?"}]}
    return agent.post(
        "/responses", json={**body, "plugins": plugins, **extra}, headers={"X-Service-Metadata": "enabled"}
    )


def test_web_plugin_adds_results_above_the_user_message(agent, agent_catalog, searxng):
    agent_catalog.script = [text(CITED)]
    response = post(agent, [{"id": "web", "max_results": 2}])
    assert response.status_code == 200, response.text
    assert searxng.searches() == ["What is the weather in Paris today?"]
    [request] = agent_catalog.requests
    system, user = request.body["input"]
    assert system["role"] == "system" and user["role"] == "user"
    assert system["content"].startswith("A web search was conducted on ")
    assert "https://weather.example.com/paris" in system["content"] and "wiki.example.net" not in system["content"]
    data = response.json()
    assert data["output"][0]["content"][0]["annotations"][0]["url"] == "https://weather.example.com/paris"
    stage = next(s for s in data["service_metadata"]["pipeline"] if s["type"] == "plugin")
    assert stage["name"] == "web" and stage["data"]["engine"] == "searxng" and len(stage["data"]["results"]) == 2
    [row] = generations(1)
    assert any(s.get("name") == "web" for s in row.pipeline)


def test_web_plugin_custom_prompt_fee_and_stream(agent, agent_catalog, searxng, settings):
    settings.GATEWAY_SEARXNG_PRICE_PER_QUERY = "0.004"
    agent_catalog.script = [text("Sunny ", "per [weather.example.com](https://weather.example.com/paris).")]
    response = post(agent, [{"id": "web", "search_prompt": "Some relevant web results:"}], stream=True)
    assert response.status_code == 200
    system = agent_catalog.requests[0].body["input"][0]["content"]
    assert system.startswith("Some relevant web results:\n\nWeb search results for")
    events = sse(response.text)
    annotated = [e for e in events if e["type"] == "response.output_text.annotation.added"]
    assert annotated and annotated[0]["annotation"]["url"] == "https://weather.example.com/paris"
    final = events[-1]["response"]
    assert Decimal(str(final["usage"]["cost"])) == Decimal("0.004020")  # 12e-6 + 4 × 2e-6 + 0.004
    [row] = generations(1)
    assert row.cost == Decimal("0.004020")


def test_web_plugin_switched_off_and_no_engine(agent, agent_catalog, searxng, settings):
    agent_catalog.script = [text("No search.")]
    response = post(agent, [{"id": "web", "enabled": False}])
    assert response.status_code == 200 and searxng.searches() == []
    settings.GATEWAY_SEARXNG_URL = ""
    response = post(agent, [{"id": "web"}])
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "plugins[0]"
    assert "the web plugin needs a web search engine" in response.json()["error"]["message"]


def test_web_plugin_engine_failure_is_502_before_the_model(agent, agent_catalog, searxng, settings):
    settings.GATEWAY_SEARXNG_URL = searxng.url + "/down"
    response = post(agent, [{"id": "web"}])
    assert response.status_code == 502 and agent_catalog.requests == []
    [row] = generations(1)
    assert row.status == "failed" and row.cost == 0


@pytest.mark.parametrize(
    ("plugin", "field"),
    [
        ({"id": "web", "max_results": 0}, "plugins[0].max_results"),
        ({"id": "web", "engine": "exa"}, "plugins[0].engine"),
        ({"id": "web", "search_prompt": 5}, "plugins[0].search_prompt"),
        ({"id": "web", "unknown": 1}, "plugins[0].unknown"),
        ({"id": "web-fetch", "max_urls": 9}, "plugins[0].max_urls"),
        ({"id": "web-fetch", "max_chars": 1}, "plugins[0].max_chars"),
        ({"id": "web-fetch", "urls": []}, "plugins[0].urls"),
    ],
)
def test_invalid_plugin_fields_are_400(agent, agent_catalog, searxng, plugin, field):
    response = post(agent, [plugin])
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == field


def test_web_fetch_plugin_adds_the_linked_pages(agent, agent_catalog, fake_web, settings):
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1"]
    fake_web.pages["paris"] = page(ARTICLE)
    good, bad = f"{fake_web.url}/pages/paris", "http://169.254.169.254/latest/"
    agent_catalog.script = [text(f"Summary of {good}")]
    body = [{"role": "user", "content": f"Summarize {good}, and {bad}."}]
    response = post(agent, [{"id": "web-fetch", "max_chars": 200}], input=body)
    assert response.status_code == 200, response.text
    system, _user = agent_catalog.requests[0].body["input"]
    assert system["role"] == "system" and "Title: Paris in spring" in system["content"]
    assert "The chestnut trees bloom" in system["content"] and "Site banner" not in system["content"]
    assert "(could not be fetched: 169.254.169.254 is a private or reserved address)" in system["content"]
    data = response.json()
    stage = next(s for s in data["service_metadata"]["pipeline"] if s["name"] == "web-fetch")
    assert [p["status"] for p in stage["data"]["pages"]] == ["completed", "failed"]
    assert data["output"][0]["content"][0]["annotations"][0]["url"] == good


def test_plugins_and_server_tools_together(agent, agent_catalog, searxng, fake_web, settings):
    from tests.servertools.conftest import call

    agent_catalog.script = [call("web_search", '{"query": "more"}'), text("Done.")]
    response = post(agent, [{"id": "web"}], tools=[{"type": "service:web_search"}])
    assert response.status_code == 200
    assert searxng.searches() == ["What is the weather in Paris today?", "more"]
    assert len(agent_catalog.requests) == 2


def test_web_plugin_engine_chooses_the_configured_engine(agent, agent_catalog, searxng, settings):
    settings.GATEWAY_BRAVE_SEARCH_API_KEY = searxng.brave_key
    settings.GATEWAY_BRAVE_SEARCH_URL = f"{searxng.url}/res/v1/web/search"
    agent_catalog.script = [text("Sunny.")]
    response = post(agent, [{"id": "web", "engine": "brave", "max_results": 1}])
    assert response.status_code == 200, response.text
    path, query, headers = searxng.requests[-1]
    assert path == "/res/v1/web/search" and query["count"] == "1"
    stage = next(s for s in response.json()["service_metadata"]["pipeline"] if s["name"] == "web")
    assert stage["data"]["engine"] == "brave"


def test_web_fetch_plugin_max_urls_fetches_the_first_links_only(agent, agent_catalog, fake_web, settings):
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1"]
    fake_web.pages["paris"] = page(ARTICLE)
    fake_web.pages["rome"] = page(ARTICLE.replace("Paris", "Rome"))
    first, second = f"{fake_web.url}/pages/paris", f"{fake_web.url}/pages/rome"
    agent_catalog.script = [text("Both.")]
    body = [{"role": "user", "content": f"Compare {first} and {second}."}]
    response = post(agent, [{"id": "web-fetch", "max_urls": 1}], input=body)
    assert response.status_code == 200, response.text
    system = agent_catalog.requests[0].body["input"][0]["content"]
    assert "Title: Paris in spring" in system and "Rome" not in system
    stage = next(s for s in response.json()["service_metadata"]["pipeline"] if s["name"] == "web-fetch")
    assert [p["url"] for p in stage["data"]["pages"]] == [first]
