"""The `context-compression` plugin end to end: a conversation too long for the model's context reaches the
upstream cut from the middle (system, first and last turns kept), per candidate endpoint, reported in
service_metadata and on the Generation; a single message too long is cut in its middle; the 400s."""

from __future__ import annotations

import pytest

from tests.inference.conftest import add_endpoint, generations
from tests.servertools.conftest import KEY_ENV, MODEL, text

PLUGIN = [{"id": "context-compression"}]


def conversation(pairs: int = 12) -> list[dict]:
    items = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "First question: " + "a" * 150},
    ]
    for n in range(pairs):
        items.append({"role": "assistant", "content": f"Answer {n}: " + "b" * 150})
        items.append({"role": "user", "content": f"Follow-up {n}: " + "c" * 150})
    items.append({"role": "assistant", "content": "Last answer."})
    items.append({"role": "user", "content": "Final question?"})
    return items


@pytest.fixture
def small(agent_catalog):
    """fakeai/agent with a 2,000-token context, a flaky twin with the same context, a roomy model."""
    from inference.models import Model

    base = {"base_url": agent_catalog.base_url, "api_key_env": KEY_ENV}
    add_endpoint("fakesmall/flaky", "fakesmall", api_format="openai-responses", upstream_model="fail-503", **base)
    add_endpoint("fakebig/agent", "fakebig", api_format="openai-responses", upstream_model="up-big", **base)
    Model.objects.filter(slug__in=[MODEL, "fakesmall/flaky"]).update(context_length=2000)
    Model.objects.filter(slug="fakebig/agent").update(context_length=100_000)
    return agent_catalog


def post(agent, model, items, plugins=PLUGIN, **extra):
    body = {"model": model, "input": items, "plugins": plugins, "max_output_tokens": 200, **extra}
    return agent.post("/responses", json=body, headers={"X-Service-Metadata": "enabled"})


def stage_of(response):
    return next(s for s in response.json()["service_metadata"]["pipeline"] if s.get("name") == "context-compression")


def test_middle_of_the_conversation_is_removed_until_it_fits(agent, small):
    small.script = [text("Short answer.")]
    items = conversation()
    response = post(agent, MODEL, items)
    assert response.status_code == 200, response.text
    sent = [(i["role"], i["content"]) for i in small.requests[0].body["input"]]
    original = [(i["role"], i["content"]) for i in items]
    assert sent[:2] == original[:2] and sent[-2:] == original[-2:]  # system, first turn, last turn kept
    assert len(sent) < len(original)
    # what is left is a prefix and a suffix of the conversation: the middle went
    head = next(k for k in range(len(sent)) if sent[k] != original[k])
    assert sent[head:] == original[len(original) - (len(sent) - head) :]
    [entry] = stage_of(response)["data"]["candidates"]
    assert entry["model"] == MODEL and entry["context_length"] == 2000 and entry["input_budget"] == 1800
    assert entry["estimate_before"] > 1800 >= entry["estimate_after"] and entry["fits"] is True
    assert entry["removed_items"] == len(original) - len(sent) and entry["truncated_chars"] == []
    removed = [r["index"] for r in entry["removed"]]
    assert removed == list(range(head, head + len(removed)))
    assert len(small.requests[0].raw) < 1800  # the upper bound held: the body sent is under the budget in bytes
    [row] = generations(1)
    assert any(s.get("name") == "context-compression" and s["data"]["candidates"] for s in row.pipeline)


def test_each_candidate_is_compressed_for_its_own_context(agent, small):
    items = conversation()
    response = post(agent, "fakesmall/flaky", items, models=["fakebig/agent"])
    assert response.status_code == 200, response.text
    first, second = small.requests
    assert first.model == "fail-503" and len(first.body["input"]) < len(items)
    assert len(second.body["input"]) == len(items)  # 100k context: sent whole
    entries = {e["model"]: e for e in stage_of(response)["data"]["candidates"]}
    assert entries["fakesmall/flaky"]["removed_items"] > 0 and "fakebig/agent" not in entries


def test_one_long_message_is_cut_in_its_middle(agent, small):
    long = "START " + "x" * 5000 + " END"
    response = post(agent, MODEL, [{"role": "user", "content": long}])
    assert response.status_code == 200, response.text
    sent = small.requests[0].body["input"][0]["content"]
    assert sent.startswith("START ") and sent.endswith(" END") and "characters removed by context-compression" in sent
    [entry] = stage_of(response)["data"]["candidates"]
    assert entry["fits"] is True and entry["removed_items"] == 0 and sum(entry["truncated_chars"]) > 3000


def test_a_prompt_that_fits_is_sent_unchanged(agent, small):
    items = conversation(1)
    response = post(agent, MODEL, items)
    assert response.status_code == 200
    assert [i["content"] for i in small.requests[0].body["input"]] == [i["content"] for i in items]
    stage = stage_of(response)
    assert stage["summary"] == "every prompt fits its model's context" and stage["data"]["candidates"] == []


@pytest.mark.parametrize(
    ("plugin", "field"),
    [({"id": "context-compression", "engine": "summarize"}, "plugins[0].engine"),
     ({"id": "context-compression", "max_tokens": 5}, "plugins[0].max_tokens")],
)  # fmt: skip
def test_invalid_fields_are_400(agent, small, plugin, field):
    response = post(agent, MODEL, "hi", plugins=[plugin])
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == field
