"""The server-tool loop end to end: bounds and stop conditions fire exactly when they should, client function
tools end the loop, server items sent back are replayed, every turn is held against the budget."""

from __future__ import annotations

from decimal import Decimal

import pytest

from budgets.models import SpendCounter, SpendReservation
from tests.fakes.fake_formats import Reply
from tests.inference.conftest import generations, wait_idle
from tests.servertools.conftest import MODEL, call, text
from tests.servertools.test_web_search import sse

SEARCH = {"type": "service:web_search"}
WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def searches(n: int) -> list:
    return [call("web_search", f'{{"query": "q{i}"}}', call_id=f"call_{i}") for i in range(1, n + 1)]


def ask(agent, **extra):
    body = {"model": MODEL, "input": "Look it up.", "tools": [SEARCH], **extra}
    return agent.post("/responses", json=body, headers={"X-Service-Metadata": "enabled"})


def stage(response) -> dict:
    return next(s for s in response.json()["service_metadata"]["pipeline"] if s["type"] == "server_tools")["data"]


def tool_choices(fake) -> list:
    return [r.body.get("tool_choice") for r in fake.requests]


# Each scripted tool turn costs $0.000018 and uses 15 tokens (12 in, 3 out); the model would search forever.
@pytest.mark.parametrize(
    ("conditions", "steps", "stopped_by"),
    [
        ([{"type": "step_count_is", "step_count": 2}], 2, "step_count_is"),
        ([{"type": "step_count_is", "step_count": 1}], 1, "step_count_is"),
        ([{"type": "max_cost", "max_cost_in_dollars": 0.00003}], 2, "max_cost"),  # 18e-6 < 3e-5 <= 36e-6
        ([{"type": "max_cost", "max_cost_in_dollars": 0.000018}], 1, "max_cost"),  # reached exactly
        ([{"type": "has_tool_call", "tool_name": "web_search"}], 1, "has_tool_call"),
        ([{"type": "has_tool_call", "tool_name": "service:web_search"}], 1, "has_tool_call"),
        ([{"type": "max_tokens_used", "max_tokens": 31}], 3, "max_tokens_used"),  # 15, 30, 45
        ([{"type": "max_tokens_used", "max_tokens": 30}], 2, "max_tokens_used"),
        ([{"type": "finish_reason_is", "reason": "tool_calls"}], 1, "finish_reason_is"),
        (  # OR: the first that holds
            [{"type": "step_count_is", "step_count": 3}, {"type": "max_tokens_used", "max_tokens": 30}],
            2,
            "max_tokens_used",
        ),
    ],
)
def test_stop_condition_fires_exactly_when_it_should(agent, agent_catalog, searxng, conditions, steps, stopped_by):
    agent_catalog.script = [*searches(steps), text("Done.")]
    response = ask(agent, stop_server_tools_when=conditions)
    assert response.status_code == 200, response.text
    # `steps` tool turns with tools offered, then one final turn with tool calls disabled.
    assert tool_choices(agent_catalog) == [None] * steps + ["none"]
    assert len(searxng.searches()) == steps
    data = stage(response)
    assert data["steps"] == steps and data["turns"] == steps + 1 and data["stopped_by"] == stopped_by
    output = response.json()["output"]
    assert [i["type"] for i in output] == ["service:web_search"] * steps + ["message"]


def test_conditions_that_never_hold_let_the_model_finish(agent, agent_catalog, searxng):
    agent_catalog.script = [*searches(3), text("Done.")]
    conditions = [
        {"type": "has_tool_call", "tool_name": "get_weather"},
        {"type": "finish_reason_is", "reason": "length"},
        {"type": "max_cost", "max_cost_in_dollars": 1},
    ]
    response = ask(agent, stop_server_tools_when=conditions)
    assert tool_choices(agent_catalog) == [None] * 4
    assert stage(response)["stopped_by"] is None and response.json()["output"][-1]["content"][0]["text"] == "Done."


@pytest.mark.parametrize("max_tool_calls", [1, 2])
def test_max_tool_calls_bounds_the_steps(agent, agent_catalog, searxng, max_tool_calls):
    agent_catalog.script = [*searches(5), text("Done.")]
    response = ask(agent, max_tool_calls=max_tool_calls)
    assert tool_choices(agent_catalog) == [None] * max_tool_calls + ["none"]
    assert stage(response)["stopped_by"] == "max_tool_calls"
    assert all("max_tool_calls" not in r.body for r in agent_catalog.requests)


def test_max_tool_calls_zero_offers_no_server_tool(agent, agent_catalog, searxng):
    agent_catalog.script = [text("No search.")]
    response = ask(agent, max_tool_calls=0)
    assert response.status_code == 200
    assert "tools" not in agent_catalog.requests[0].body and searxng.searches() == []


def test_default_bound_is_30_steps(agent, agent_catalog, searxng):
    agent_catalog.script = [*searches(31), text("Done.")]
    response = ask(agent)
    assert tool_choices(agent_catalog) == [None] * 30 + ["none"]
    assert stage(response)["steps"] == 30 and stage(response)["stopped_by"] == "max_tool_calls"


def test_model_calling_tools_in_the_final_turn_is_not_obeyed(agent, agent_catalog, searxng):
    agent_catalog.script = searches(2)
    response = ask(agent, max_tool_calls=1)
    assert response.status_code == 200
    assert len(searxng.searches()) == 1
    assert [i["type"] for i in response.json()["output"]] == ["service:web_search"]


def test_client_function_call_ends_the_loop(agent, agent_catalog, searxng):
    agent_catalog.script = [call("get_weather", '{"city": "Paris"}')]
    response = ask(agent, tools=[SEARCH, WEATHER])
    output = response.json()["output"]
    assert [(i["type"], i.get("name")) for i in output] == [("function_call", "get_weather")]
    assert len(agent_catalog.requests) == 1
    assert [t["name"] for t in agent_catalog.requests[0].body["tools"]] == ["get_weather", "web_search"]


def test_turn_with_server_and_client_calls_runs_the_search_and_returns_the_client_call(agent, agent_catalog, searxng):
    mixed = call("web_search", '{"query": "paris"}')
    mixed.more_calls = [("call_2", "get_weather", '{"city": "Paris"}')]
    agent_catalog.script = [mixed]
    response = ask(agent, tools=[SEARCH, WEATHER])
    kinds = [i["type"] for i in response.json()["output"]]
    assert sorted(kinds) == ["function_call", "service:web_search"]
    assert searxng.searches() == ["paris"] and len(agent_catalog.requests) == 1
    [row] = generations(1)
    assert row.tool_calls == 2


def test_server_items_sent_back_are_replayed_as_calls_and_outputs(agent, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "paris"}'), text("Sunny.")]
    first = ask(agent).json()
    agent_catalog.requests.clear()
    agent_catalog.script = [text("Still sunny.")]
    history = [{"role": "user", "content": "Look it up."}, *first["output"], {"role": "user", "content": "And now?"}]
    response = ask(agent, input=history)
    assert response.status_code == 200, response.text
    sent = agent_catalog.requests[0].body["input"]
    kinds = [i.get("type", "message") for i in sent]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
    assert sent[1]["name"] == "web_search" and sent[2]["output"] == first["output"][0]["output"]
    # Without the server tool in the request, the items are left out (no provider knows them).
    agent_catalog.requests.clear()
    response = agent.post("/responses", json={"model": MODEL, "input": history})
    assert response.status_code == 200, response.text
    assert [i.get("type", "message") for i in agent_catalog.requests[0].body["input"]] == ["message"] * 3


def test_failed_search_is_told_to_the_model_and_the_loop_goes_on(agent, agent_catalog, searxng, settings):
    settings.GATEWAY_SEARXNG_URL = searxng.url + "/nowhere"
    agent_catalog.script = [call("web_search", '{"query": "paris"}'), text("I could not search.")]
    response = ask(agent)
    item = response.json()["output"][0]
    assert item["status"] == "failed" and "searxng answered HTTP 404" in item["output"]
    assert agent_catalog.requests[1].body["input"][-1]["output"].startswith("Error: the web search failed")


# --- budgets ----------------------------------------------------------------------------------------------


def put_budget(org, interval, limit):
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/{interval}", {"limit_usd": limit}, format="json"
    )
    assert response.status_code == 200, response.content


def counter(org) -> SpendCounter:
    wait_idle()
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")


def test_budget_settles_every_turn_and_the_generation_has_the_sum(agent, agent_catalog, searxng, org):
    put_budget(org, "daily", 1)
    agent_catalog.script = [*searches(2), text("Done.")]
    response = ask(agent, max_output_tokens=10)
    assert response.status_code == 200, response.text
    [row] = generations(1)
    assert row.cost == Decimal("0.000054")  # three turns of 12 in + 3 out
    spent = counter(org)
    assert spent.spent_usd == row.cost and spent.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_a_turn_the_budget_cannot_hold_is_not_sent(agent, agent_catalog, searxng, org):
    # The first turn fits; the second (its prompt grew by the search results, some 400 bytes) does not: 402
    # before it goes upstream, and the first turn is charged. tests/servertools/test_loop_money.py finds the
    # first turn's hold (`first_turn_hold`); the budget leaves 100 tokens' worth beside it.
    from tests.servertools.test_loop_money import first_turn_hold

    first = first_turn_hold(agent, agent_catalog, org, {"max_output_tokens": 10})
    put_budget(org, "daily", float(first + Decimal("0.0001")))
    agent_catalog.script = [*searches(1), text("Done.")]
    response = ask(agent, max_output_tokens=10)
    assert response.status_code == 402, response.text
    assert len(agent_catalog.requests) == 1
    rows = [row for row in generations(2) if row.error_code == 402 and row.cost]
    [row] = rows
    assert row.status == "failed" and row.cost == Decimal("0.000018")
    spent = counter(org)
    assert spent.spent_usd == Decimal("0.000018") and spent.reserved_units == 0


# --- failures ---------------------------------------------------------------------------------------------


def test_later_turn_failing_everywhere_is_a_502_in_json(agent, agent_catalog, searxng):
    agent_catalog.script = [*searches(1), Reply(fail_status=500)]
    response = ask(agent)
    assert response.status_code == 502, response.text
    [row] = generations(1)
    assert row.status == "failed" and row.cost == Decimal("0.000018") and row.tool_calls == 1


def test_later_turn_failing_in_a_stream_ends_it_with_error_and_failed(agent, agent_catalog, searxng):
    agent_catalog.script = [*searches(1), Reply(fail_status=500)]
    response = ask(agent, stream=True)
    assert response.status_code == 200
    events = sse(response.text)
    kinds = [e["type"] for e in events]
    assert kinds[2:4] == ["response.output_item.added", "response.output_item.done"]
    assert kinds[-2:] == ["error", "response.failed"]
    assert response.text.rstrip().endswith("data: [DONE]")
    [row] = generations(1)
    assert row.status == "failed" and row.tool_calls == 1 and row.cost == Decimal("0.000018")


def test_turn_cut_mid_stream_is_charged_its_estimate(agent, agent_catalog, searxng, fake_upstream, monkeypatch):
    from tests.inference.conftest import add_endpoint
    from tests.servertools.conftest import KEY_ENV

    add_endpoint(
        "fakeai/cut", "fakeai", api_format="openai-responses", base_url=fake_upstream.base_url, api_key_env=KEY_ENV,
        upstream_model="cut-stream",
    )  # fmt: skip
    agent_catalog.script = [text(*["word "] * 40)]  # the fake sends half of the frames, then drops the connection
    response = ask(agent, model="fakeai/cut", stream=True)
    events = sse(response.text)
    assert events[-1]["type"] == "response.failed"
    assert any(e["type"] == "response.output_text.delta" for e in events)
    [row] = generations(1)
    streamed = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    # the estimate of any cut stream: the output streamed (UTF-8 bytes + 16 of framing) within the output cap
    assert row.status == "failed" and row.output_tokens == len(streamed.encode()) + 16 and row.cost > 0
    stage = next(s for s in row.pipeline if s["type"] == "server_tools")
    assert stage["data"]["turns"] == 1


def test_tool_choice_naming_a_server_tool_forces_its_function(agent, agent_catalog, searxng):
    agent_catalog.script = [*searches(1), text("Done.")]
    response = ask(agent, tool_choice={"type": "service:web_search"}, max_tool_calls=1)
    assert response.status_code == 200, response.text
    assert tool_choices(agent_catalog) == [{"type": "function", "name": "web_search"}, "none"]


def test_tool_choice_naming_an_absent_server_tool_is_400(agent, agent_catalog, searxng):
    response = ask(agent, tools=[WEATHER], tool_choice={"type": "service:web_search"})
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "tool_choice.type"
