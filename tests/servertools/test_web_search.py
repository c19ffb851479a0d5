"""service:web_search end to end: the loopback gateway, the fake upstream scripted to call the tool, and the
fake web speaking SearXNG's and Brave's APIs."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, call, text

CITED = "Sunny, per [weather.example.com](https://weather.example.com/paris)."


def test_json_search_then_answer_with_citation(agent, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text("Sunny, per ", CITED[11:])]
    body = {"model": MODEL, "input": "Weather in Paris?", "tools": [{"type": "service:web_search"}]}
    response = agent.post("/responses", json=body, headers={"X-Service-Metadata": "enabled"})
    assert response.status_code == 200, response.text
    data = response.json()
    search, message = data["output"]
    assert search["type"] == "service:web_search" and search["status"] == "completed"
    assert search["action"]["query"] == "paris weather" and search["engine"] == "searxng"
    assert [s["url"] for s in search["action"]["sources"]] == [r["url"] for r in searxng.results]
    assert search["call_id"] == "call_1" and "https://weather.example.com/paris" in search["output"]
    part = message["content"][0]
    assert part["text"] == CITED
    start = CITED.index("[")
    assert part["annotations"] == [
        {
            "type": "url_citation",
            "url": "https://weather.example.com/paris",
            "title": "Paris weather today",
            "start_index": start,
            "end_index": len(CITED) - 1,
        }
    ]
    # The engine got the model's query; the upstream saw the tool as a function, then its output.
    assert searxng.searches() == ["paris weather"]
    first, second = agent_catalog.requests
    assert [t["name"] for t in first.body["tools"]] == ["web_search"]
    kinds = [item.get("type") for item in second.body["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    assert "https://weather.example.com/paris" in second.body["input"][-1]["output"]
    assert "max_tool_calls" not in second.body and second.body.get("tool_choice") != "none"
    # Usage and cost are the sums of both turns (12 in + 3 out, then 12 in + 4 out at 1e-6 / 2e-6).
    usage = data["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (24, 7)
    assert Decimal(str(usage["cost"])) == Decimal("0.000038")
    metadata = data["service_metadata"]
    stage = next(s for s in metadata["pipeline"] if s["type"] == "server_tools")
    assert stage["data"]["turns"] == 2 and stage["data"]["server_tool_calls"] == 1
    assert [a["turn"] for a in metadata["attempts"]] == [1, 2]
    assert (metadata["strategy"], metadata["attempt"]) == ("direct", 1)
    [row] = generations(1)
    assert row.status == "completed" and row.tool_calls == 1
    assert row.cost == Decimal("0.000038") and (row.input_tokens, row.output_tokens) == (24, 7)
    assert any(s["type"] == "server_tools" and s["data"]["turns"] == 2 for s in row.pipeline)


def sse(text_body: str) -> list[dict]:
    events = []
    for frame in text_body.split("\n\n"):
        for line in frame.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(orjson.loads(line[6:]))
    return events


def test_stream_shows_the_search_item_as_it_happens_then_the_text(agent, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text("Sunny, per ", CITED[11:])]
    body = {"model": MODEL, "input": "Weather?", "tools": [{"type": "service:web_search"}], "stream": True}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200
    events = sse(response.text)
    kinds = [e["type"] for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
    ]
    added, done = events[2], events[3]
    assert added["item"]["type"] == "service:web_search" and added["item"]["status"] == "in_progress"
    assert added["item"]["action"]["query"] == "paris weather"
    assert done["item"]["status"] == "completed" and done["item"]["action"]["sources"]
    assert "response.output_text.annotation.added" in kinds
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == CITED
    final = events[-1]
    assert final["type"] == "response.completed"
    assert [i["type"] for i in final["response"]["output"]] == ["service:web_search", "message"]
    assert final["response"]["output"][1]["content"][0]["annotations"][0]["url"] == "https://weather.example.com/paris"
    assert final["response"]["usage"]["input_tokens"] == 24
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    [row] = generations(1)
    assert row.tool_calls == 1 and row.input_tokens == 24 and row.streamed


def test_no_engine_configured_is_a_400_naming_the_tool(agent, agent_catalog, settings):
    settings.GATEWAY_SEARXNG_URL = ""
    settings.GATEWAY_BRAVE_SEARCH_API_KEY = ""
    body = {"model": MODEL, "input": "hi", "tools": [{"type": "function", "name": "f"}, {"type": "service:web_search"}]}
    response = agent.post("/responses", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["metadata"]["field"] == "tools[1]"
    assert "service:web_search needs a web search engine" in error["message"]
    assert agent_catalog.requests == []


def test_workspace_without_search_is_a_400(agent, agent_catalog, searxng, settings, org):
    settings.GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES = {str(org.workspace.id): "none"}
    response = agent.post("/responses", json={"model": MODEL, "input": "hi", "tools": [{"type": "service:web_search"}]})
    assert response.status_code == 400
    assert "switched off for this workspace" in response.json()["error"]["message"]


def test_requested_engine_must_be_configured(agent, agent_catalog, searxng):
    tool = {"type": "service:web_search", "parameters": {"engine": "brave"}}
    response = agent.post("/responses", json={"model": MODEL, "input": "hi", "tools": [tool]})
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "tools[0].parameters.engine"


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ({"type": "service:web_search", "parameters": {"max_results": 0}}, "tools[0].parameters.max_results"),
        ({"type": "service:web_search", "parameters": {"max_results": 21}}, "tools[0].parameters.max_results"),
        ({"type": "service:web_search", "parameters": {"engine": "google"}}, "tools[0].parameters.engine"),
        ({"type": "service:web_search", "parameters": {"safe": True}}, "tools[0].parameters.safe"),
        ({"type": "service:web_search", "parameters": 3}, "tools[0].parameters"),
        ({"type": "service:web_search", "name": "x"}, "tools[0].name"),
    ],
)
def test_invalid_tool_fields_are_400(agent, agent_catalog, searxng, tool, field):
    response = agent.post("/responses", json={"model": MODEL, "input": "hi", "tools": [tool]})
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == field


def test_brave_engine_by_workspace_with_max_results(agent, agent_catalog, searxng, settings, org):
    settings.GATEWAY_BRAVE_SEARCH_API_KEY = searxng.brave_key
    settings.GATEWAY_BRAVE_SEARCH_URL = f"{searxng.url}/res/v1/web/search"
    settings.GATEWAY_BRAVE_SEARCH_PRICE_PER_QUERY = "0.005"
    settings.GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES = {str(org.workspace.id): "brave"}
    agent_catalog.script = [call("web_search", '{"query": "paris"}'), text("Sunny.")]
    tool = {"type": "service:web_search", "parameters": {"max_results": 2}}
    response = agent.post("/responses", json={"model": MODEL, "input": "hi", "tools": [tool]})
    assert response.status_code == 200, response.text
    item = response.json()["output"][0]
    assert item["engine"] == "brave" and len(item["action"]["sources"]) == 2
    path, query, headers = searxng.requests[-1]
    assert path == "/res/v1/web/search" and query == {"q": "paris", "count": "2"}
    assert headers["x-subscription-token"] == searxng.brave_key
    assert "<strong>" not in item["output"] and "Sunny, 21 °C." in item["output"]
    # The search fee is part of the cost: 18e-6 + 18e-6 for the turns, 0.005 for the query.
    assert Decimal(str(response.json()["usage"]["cost"])) == Decimal("0.005036")
    [row] = generations(1)
    assert row.cost == Decimal("0.005036")


def test_official_sdk_reads_the_answer_and_its_citations(agent_sdk, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text(CITED)]
    response = agent_sdk.responses.create(model=MODEL, input="Weather?", tools=[{"type": "service:web_search"}])
    assert response.output_text == CITED
    annotation = response.output[1].content[0].annotations[0]
    assert annotation.type == "url_citation" and annotation.url == "https://weather.example.com/paris"
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text(CITED)]
    with agent_sdk.responses.stream(model=MODEL, input="Weather?", tools=[{"type": "service:web_search"}]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.output_text == CITED
    assert "response.output_text.annotation.added" in {e.type for e in events}
