"""service:tool_search + defer_loading end to end: deferred tools are withheld, found by BM25 over names,
descriptions and parameter names, and offered from the next turn; with hundreds of deferred tools."""

from __future__ import annotations

import time

import pytest

from inference.servertools.bm25 import ToolIndex
from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, call, text

NOW = {"type": "function", "name": "now", "description": "The current time"}
SEARCH = {"type": "service:tool_search"}
VERBS = ["create", "update", "delete", "list", "archive", "export"]
NOUNS = ["invoice", "contact", "deal", "ticket", "project", "campaign", "order", "shipment", "lead", "report"]


def catalog_of_tools(count: int) -> list[dict]:
    """`count` deferred CRM-like tools, plus the weather tool the model needs somewhere in the middle."""
    tools = []
    for i in range(count):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        tools.append(
            {
                "type": "function",
                "name": f"{verb}_{noun}_{i}",
                "description": f"{verb.title()} a {noun} in workspace {i}",
                "parameters": {"type": "object", "properties": {f"{noun}_id": {"type": "string"}}},
                "defer_loading": True,
            }
        )
    weather = {
        "type": "function",
        "name": "getForecast",
        "description": "Weather forecast",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}},
        "defer_loading": True,
    }
    tools.insert(count // 2, weather)
    return tools


def test_deferred_tools_are_withheld_found_and_offered_next_turn(agent, agent_catalog):
    deferred = catalog_of_tools(300)
    agent_catalog.script = [
        call("tool_search", '{"query": "forecast for a city"}'),
        call("getForecast", '{"city": "Paris"}'),
    ]
    body = {"model": MODEL, "input": "Weather in Paris?", "tools": [NOW, SEARCH, *deferred]}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    first, second = agent_catalog.requests
    assert [t["name"] for t in first.body["tools"]] == ["now", "tool_search"]
    names = [t["name"] for t in second.body["tools"]]
    assert names[0] == "now" and names[-1] == "tool_search" and "getForecast" in names
    assert all("defer_loading" not in t for t in second.body["tools"])
    search, client_call = response.json()["output"]
    assert search["type"] == "service:tool_search" and search["query"] == "forecast for a city"
    assert search["tools"][0] == "getForecast" and "getForecast" in search["output"]
    assert (client_call["type"], client_call["name"]) == ("function_call", "getForecast")
    [row] = generations(1)
    assert row.tool_calls == 2


def test_a_found_tool_stays_offered_and_unfound_ones_stay_hidden(agent, agent_catalog):
    deferred = catalog_of_tools(20)
    agent_catalog.script = [
        call("tool_search", '{"query": "weather"}'),
        call("tool_search", '{"query": "zebra"}', call_id="call_2"),
        text("Done."),
    ]
    body = {"model": MODEL, "input": "hi", "tools": [NOW, SEARCH, *deferred]}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200
    third = agent_catalog.requests[2]
    assert [t["name"] for t in third.body["tools"]] == ["now", "getForecast", "tool_search"]
    assert response.json()["output"][1]["tools"] == [] and "No tools match" in response.json()["output"][1]["output"]


def test_deferred_tool_called_earlier_in_the_history_is_offered(agent, agent_catalog):
    deferred = catalog_of_tools(10)
    history = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "getForecast", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Sunny"},
    ]
    agent_catalog.script = [text("Sunny.")]
    response = agent.post("/responses", json={"model": MODEL, "input": history, "tools": [NOW, SEARCH, *deferred]})
    assert response.status_code == 200, response.text
    assert [t["name"] for t in agent_catalog.requests[0].body["tools"]] == ["now", "getForecast", "tool_search"]


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ([NOW, {**NOW, "name": "x", "defer_loading": True}], "tools[1].defer_loading"),
        ([{**NOW, "defer_loading": True}, SEARCH], "tools[0].defer_loading"),
        ([NOW, {"type": "service:tool_search", "parameters": {"max_results": 50}}], "tools[1].parameters.max_results"),
        ([NOW, {"type": "function", "name": "tool_search"}, SEARCH], "tools[2].type"),
    ],
)
def test_invalid_deferred_setups_are_400(agent, agent_catalog, tools, field):
    response = agent.post("/responses", json={"model": MODEL, "input": "hi", "tools": tools})
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == field


def test_bm25_ranks_by_name_description_and_parameter_names():
    tools = catalog_of_tools(500)
    index = ToolIndex(tools)
    assert index.search("weather forecast", 3)[0]["name"] == "getForecast"
    assert index.search("city", 1)[0]["name"] == "getForecast"  # a parameter name
    assert index.search("delete invoices", 1)[0]["name"].startswith("delete_invoice_")
    assert index.search("xylophone", 5) == []
    start = time.perf_counter()
    ToolIndex(tools).search("archive shipment", 5)
    assert time.perf_counter() - start < 0.2  # hundreds of tools: a few milliseconds
