"""`fusion` end to end: the panel models' calls in parallel (what each upstream got), the synthesizing turn (the
answers in its prompt), what the client got (JSON and stream), the Generation row, the budget counters."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest

from budgets import services as budget_services
from metering.cost import usd_to_units
from tests.fakes.fake_formats import Reply
from tests.routers.conftest import generations, stage_of

QUESTION = "What is the capital of France?"
PANEL = ["cheap/small", "mid/coder"]
# usage per call: 12 input tokens, 3 output (1 piece + 2 reasoning); prices from tests/routers/conftest.py
COST = Decimal("0.0000018") + Decimal("0.000018") + Decimal("0.00018")


def fusion(client, synth="big/large", panel=PANEL, **extra):
    body = {
        "model": synth,
        "input": [{"role": "user", "content": QUESTION}],
        "plugins": [{"id": "fusion", "analysis_models": panel}],
        **extra,
    }
    return client.post("/responses", json=body)


def script(fake):
    fake.model_scripts["up-cheap-small"] = [Reply(pieces=["Paris is the capital."])]
    fake.model_scripts["up-mid-coder"] = [Reply(pieces=["The capital is Lyon."])]
    fake.model_scripts["up-big-large"] = [Reply(pieces=["Paris."])]


def settled_spend(timeout: float = 10.0) -> tuple[int, int]:
    from budgets.models import SpendCounter

    deadline = time.monotonic() + timeout
    while True:
        counters = list(SpendCounter.objects.filter(scope="workspace"))
        spent, held = sum(c.spent_units for c in counters), sum(c.reserved_units for c in counters)
        if (spent and not held) or time.monotonic() > deadline:
            return spent, held
        time.sleep(0.05)


def test_the_panel_answers_and_the_request_model_synthesizes(client, router_catalog, org):
    budget_services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("10"))
    script(router_catalog)
    response = fusion(client, tools=[{"type": "function", "name": "lookup", "parameters": {"type": "object"}}])
    assert response.status_code == 200, response.text
    by_model = {r.model: r for r in router_catalog.requests}
    assert set(by_model) == {"up-cheap-small", "up-mid-coder", "up-big-large"}
    for panel in ("up-cheap-small", "up-mid-coder"):
        sent = by_model[panel].body
        assert sent["input"] == [{"role": "user", "content": QUESTION}] and "tools" not in sent
        assert not sent.get("stream")
    synth_input = by_model["up-big-large"].body["input"]
    system, user = synth_input
    assert user == {"role": "user", "content": QUESTION} and system["role"] == "system"
    assert "### Answer 1 (cheap/small)\nParis is the capital." in system["content"]
    assert "### Answer 2 (mid/coder)\nThe capital is Lyon." in system["content"]
    assert "tools" in by_model["up-big-large"].body  # the synthesizing turn is the request as sent
    data = response.json()
    assert data["output"][0]["content"][0]["text"] == "Paris."
    assert Decimal(str(data["usage"]["cost"])) == COST
    assert data["usage"]["input_tokens"] == 36 and data["usage"]["output_tokens"] == 9
    stage = stage_of(data, "fusion")
    assert [(c["model"], c["status"]) for c in stage["data"]["calls"]] == [(m, "completed") for m in PANEL]
    assert stage["data"]["calls"][1]["provider"] == "mid" and stage["data"]["calls"][1]["cost"] == 0.000018
    [row] = generations(1)
    assert row.cost == COST and row.model == "big/large" and row.input_tokens == 36
    assert any(s.get("name") == "fusion" for s in row.pipeline)
    assert settled_spend() == (usd_to_units(COST), 0)


def test_fusion_streams_the_synthesis(client, router_catalog):
    script(router_catalog)
    response = fusion(client, stream=True)
    assert response.status_code == 200
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Paris."
    final = events[-1]["response"]
    assert Decimal(str(final["usage"]["cost"])) == COST
    assert [r.stream for r in router_catalog.requests if r.model != "up-big-large"] == [False, False]
    [row] = generations(1)
    assert row.cost == COST


def test_a_budget_that_cannot_hold_the_panel_refuses_before_any_call(client, router_catalog, org):
    budget_services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("0.1"))
    response = fusion(client, synth="cheap/small", panel=["big/large"])  # big/large: $0.33 at worst
    assert response.status_code == 402, response.text
    assert router_catalog.requests == []
    from budgets.models import SpendCounter

    deadline = time.monotonic() + 10
    while SpendCounter.objects.filter(reserved_units__gt=0).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not SpendCounter.objects.filter(reserved_units__gt=0).exists()


def test_failed_panel_calls(client, router_catalog):
    router_catalog.model_scripts["up-cheap-small"] = [Reply(fail_status=400)]
    router_catalog.model_scripts["up-mid-coder"] = [Reply(pieces=["The capital is Paris."])]
    router_catalog.model_scripts["up-big-large"] = [Reply(pieces=["Paris."])]
    response = fusion(client)
    assert response.status_code == 200, response.text
    calls = stage_of(response.json(), "fusion")["data"]["calls"]
    assert [c["status"] for c in calls] == ["failed", "completed"]
    synth = next(r for r in router_catalog.requests if r.model == "up-big-large")
    assert "Answer 1 (mid/coder)" in synth.body["input"][0]["content"]
    router_catalog.requests.clear()
    router_catalog.model_scripts["up-cheap-small"] = [Reply(fail_status=400)]
    router_catalog.model_scripts["up-mid-coder"] = [Reply(fail_status=400)]
    failed = fusion(client)
    assert failed.status_code == 502 and failed.json()["error"]["metadata"]["field"] == "plugins[0]"
    assert all(r.model != "up-big-large" for r in router_catalog.requests)


@pytest.mark.parametrize(
    ("plugin", "status", "field"),
    [
        ({"id": "fusion"}, 400, "plugins[0].analysis_models"),
        ({"id": "fusion", "analysis_models": []}, 400, "plugins[0].analysis_models"),
        ({"id": "fusion", "analysis_models": ["a/b", "a/b"]}, 400, "plugins[0].analysis_models[1]"),
        ({"id": "fusion", "analysis_models": ["a/b"], "model": "c/d"}, 400, "plugins[0].model"),
        ({"id": "fusion", "analysis_models": ["a/b"], "max_chars": 5}, 400, "plugins[0].max_chars"),
        ({"id": "fusion", "analysis_models": ["cheap/small", "nobody/here"]}, 404, "plugins[0].analysis_models[1]"),
    ],
)
def test_fusion_refusals(client, router_catalog, plugin, status, field):
    response = client.post("/responses", json={"model": "big/large", "input": QUESTION, "plugins": [plugin]})
    assert response.status_code == status, response.text
    assert response.json()["error"]["metadata"]["field"] == field
    assert router_catalog.requests == []


def test_fusion_through_chat_completions(router_sdk, router_catalog):
    script(router_catalog)
    chat = router_sdk.chat.completions.create(
        model="big/large",
        messages=[{"role": "user", "content": QUESTION}],
        extra_body={"plugins": [{"id": "fusion", "analysis_models": PANEL}]},
    )
    assert chat.choices[0].message.content == "Paris."
    synth = next(r for r in router_catalog.requests if r.model == "up-big-large")
    assert "### Answer 2 (mid/coder)" in synth.body["input"][0]["content"]
    [row] = generations(1)
    assert row.cost == COST and row.ingress_format == "chat-completions"
