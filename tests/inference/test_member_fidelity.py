"""Members that were accepted and then lost on some provider format (issue 37's "silently dropped members"): each is
now honoured on the formats that can carry it and a 400 naming it (and why) where none of the request's endpoints
can. Through the loopback gateway; the fake upstream records what each provider was sent."""

from __future__ import annotations

import json

import pytest

from inference.models import Endpoint
from inference.providers.openai_chat import CHAT_EFFORTS
from inference.routing import clear_caches
from tests.fakes.fake_formats import Reply
from tests.inference.conftest import add_endpoint
from tests.servertools.conftest import agent, agent_catalog  # noqa: F401  (fixtures)

RESPONSES = "fakeai/agent"  # openai-responses format
CHAT = "fakechat/agent"  # openai-chat format (an OpenAI-compatible vendor, not api.openai.com)
CLAUDE = "fakeclaude/agent"  # anthropic-messages format
METADATA = {"X-Service-Metadata": "enabled"}


def tool(name: str) -> dict:
    return {"type": "function", "name": name, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}


def events(response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]


def refused(response, member: str, says: str) -> None:
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith(f"{member}:") and says in message, message


# --- top_logprobs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_top_logprobs_come_back_on_a_stream(agent, agent_catalog, model):  # noqa: F811
    """Was: every `response.output_text.delta` carried `"logprobs": []` whatever the upstream sent."""
    body = {"model": model, "input": "Hello", "top_logprobs": 2, "stream": True}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    deltas = [e for e in events(response) if e["type"] == "response.output_text.delta"]
    assert deltas and all(len(e["logprobs"]) == 1 for e in deltas)
    assert [e["logprobs"][0]["token"] for e in deltas] == [e["delta"] for e in deltas]
    assert len(deltas[0]["logprobs"][0]["top_logprobs"]) == 2
    done = next(e for e in events(response) if e["type"] == "response.output_text.done")
    assert [entry["token"] for entry in done["logprobs"]] == [e["delta"] for e in deltas]
    final = events(response)[-1]["response"]
    assert final["output"][-1]["content"][0]["logprobs"] == done["logprobs"]


@pytest.mark.parametrize("model", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_top_logprobs_come_back_in_a_json_answer(agent, agent_catalog, model):  # noqa: F811
    response = agent.post("/responses", json={"model": model, "input": "Hello", "top_logprobs": 1})
    assert response.status_code == 200, response.text
    part = response.json()["output"][-1]["content"][0]
    assert part["logprobs"] and len(part["logprobs"][0]["top_logprobs"]) == 1


def test_top_logprobs_on_anthropic_is_400(agent, agent_catalog):  # noqa: F811
    """Was: left out for the Anthropic endpoint, a 200 without log-probabilities."""
    response = agent.post("/responses", json={"model": CLAUDE, "input": "Hello", "top_logprobs": 2})
    refused(response, "top_logprobs", "not Anthropic")
    assert agent_catalog.requests == []


# --- tool_choice allowed_tools ------------------------------------------------------------------------------

ALLOWED = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "lookup"}]}


def test_allowed_tools_on_anthropic_sends_only_those_tools(agent, agent_catalog):  # noqa: F811
    """Was: the choice was lost, every tool callable, the model free not to call any."""
    body = {"model": CLAUDE, "input": "Hello", "tools": [tool("lookup"), tool("delete")], "tool_choice": ALLOWED}
    assert agent.post("/responses", json=body).status_code == 200
    sent = agent_catalog.requests[-1].body
    assert [t["name"] for t in sent["tools"]] == ["lookup"] and sent["tool_choice"] == {"type": "any"}


def test_allowed_tools_on_a_chat_vendor_sends_only_those_tools(agent, agent_catalog):  # noqa: F811
    """Was: reduced to its mode with every tool sent (`delete` callable)."""
    body = {"model": CHAT, "input": "Hello", "tools": [tool("lookup"), tool("delete")], "tool_choice": ALLOWED}
    assert agent.post("/responses", json=body).status_code == 200
    sent = agent_catalog.requests[-1].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["lookup"] and sent["tool_choice"] == "required"


# --- reasoning on Anthropic ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"max_output_tokens": 1000}, "max_output_tokens above 1024"),
        ({"tools": [tool("lookup")], "tool_choice": "required"}, "forced tool"),
    ],
    ids=["cap-1000", "forced-tool"],
)
def test_reasoning_anthropic_cannot_think_with_is_400(agent, agent_catalog, extra, says):  # noqa: F811
    """Was: sent without `thinking` (reasoning silently off)."""
    body = {"model": CLAUDE, "input": "Hello", "reasoning": {"effort": "high"}, **extra}
    refused(agent.post("/responses", json=body), "reasoning", says)
    assert agent_catalog.requests == []


def test_reasoning_with_a_cap_above_1024_thinks_within_it(agent, agent_catalog):  # noqa: F811
    body = {"model": CLAUDE, "input": "Hello", "reasoning": {"effort": "high"}, "max_output_tokens": 2000}
    assert agent.post("/responses", json=body).status_code == 200
    sent = agent_catalog.requests[-1].body
    assert sent["max_tokens"] == 2000 and sent["thinking"] == {"type": "enabled", "budget_tokens": 1999}


def test_a_reasoning_budget_alone_thinks_on_anthropic(agent, agent_catalog):  # noqa: F811
    """Was: `reasoning: {max_tokens}` without an effort sent no `thinking` (the budget silently ignored)."""
    body = {"model": CLAUDE, "input": "Hello", "reasoning": {"max_tokens": 3000}}
    assert agent.post("/responses", json=body).status_code == 200
    assert agent_catalog.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    off = {**body, "reasoning": {"max_tokens": 3000, "enabled": False}}
    assert agent.post("/responses", json=off).status_code == 200
    assert "thinking" not in agent_catalog.requests[-1].body


@pytest.mark.parametrize(("budget", "effort"), [(1500, "low"), (3000, "medium"), (20000, "high"), (40000, "xhigh")])
def test_a_reasoning_budget_alone_asks_effort_only_providers_for_its_effort(agent, agent_catalog, budget, effort):  # noqa: F811
    """Was: the budget dropped and no effort sent (the model's default reasoning)."""
    body = {"input": "Hello", "reasoning": {"max_tokens": budget}}
    assert agent.post("/responses", json={**body, "model": RESPONSES}).status_code == 200
    assert agent_catalog.requests[-1].body["reasoning"] == {"effort": effort}
    assert agent.post("/responses", json={**body, "model": CHAT}).status_code == 200
    assert agent_catalog.requests[-1].body["reasoning_effort"] == CHAT_EFFORTS.get(effort, effort)


def test_a_reasoning_budget_below_1024_is_400_on_anthropic(agent, agent_catalog):  # noqa: F811
    """Was: the effort's budget (2048 and up) used in place of the smaller one asked for."""
    body = {"model": CLAUDE, "input": "Hello", "reasoning": {"effort": "low", "max_tokens": 500}}
    refused(agent.post("/responses", json=body), "reasoning.max_tokens", "at least 1024")
    assert agent_catalog.requests == []


# --- temperature above 1 on Anthropic, item_reference -------------------------------------------------------


def test_temperature_above_1_on_anthropic_is_400(agent, agent_catalog):  # noqa: F811
    """Was: clamped to 1 silently."""
    response = agent.post("/responses", json={"model": CLAUDE, "input": "Hello", "temperature": 1.5})
    refused(response, "temperature", "0..1")
    assert agent_catalog.requests == []
    assert agent.post("/responses", json={"model": CLAUDE, "input": "Hello", "temperature": 0.7}).status_code == 200
    assert agent_catalog.requests[-1].body["temperature"] == 0.7


def test_sampling_with_thinking_on_anthropic_is_left_out_and_reported(agent, agent_catalog):  # noqa: F811
    """Was: temperature, top_p and top_k left out silently when thinking was on (Anthropic refuses them then)."""
    body = {"model": CLAUDE, "input": "Hello", "temperature": 0.5, "top_p": 0.9, "top_k": 5}
    thinking = agent.post("/responses", json={**body, "reasoning": {"effort": "low"}, "max_output_tokens": 4000})
    assert thinking.status_code == 200, thinking.text
    sent = agent_catalog.requests[-1].body
    assert sent["thinking"]["type"] == "enabled" and not {"temperature", "top_p", "top_k"} & set(sent)
    assert thinking.headers["x-service-omitted-parameters"] == "temperature, top_k, top_p"
    plain = agent.post("/responses", json=body)
    assert plain.status_code == 200 and "x-service-omitted-parameters" not in plain.headers
    assert {k: agent_catalog.requests[-1].body[k] for k in ("temperature", "top_p", "top_k")} == {
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
    }


@pytest.mark.parametrize("model", [CLAUDE, CHAT], ids=["anthropic", "chat"])
def test_item_reference_is_400_on_translating_formats(agent, agent_catalog, model):  # noqa: F811
    """Was: the referenced item was dropped and the rest sent."""
    items = [{"type": "item_reference", "id": "msg_earlier"}, {"role": "user", "content": "Go on"}]
    response = agent.post("/responses", json={"model": model, "input": items})
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "item_reference" in message and "stateless" in message
    assert agent_catalog.requests == []


# --- service_tier -------------------------------------------------------------------------------------------


def test_service_tier_on_a_chat_vendor_is_forwarded_or_400(agent, agent_catalog):  # noqa: F811
    """Was: dropped for non-OpenAI chat vendors (a 200 at the vendor's standard tier). Now forwarded to an endpoint
    that declares `service_tier` (or declares nothing), a 400 naming it when the endpoint declares other parameters."""
    assert agent.post("/responses", json={"model": CHAT, "input": "Hi", "service_tier": "flex"}).status_code == 200
    assert agent_catalog.requests[-1].body["service_tier"] == "flex"
    Endpoint.objects.filter(model__slug=CHAT).update(supported_parameters=["temperature", "max_tokens"])
    clear_caches()
    refused(
        agent.post("/responses", json={"model": CHAT, "input": "Hi", "service_tier": "flex"}), "service_tier", "flex"
    )
    assert len(agent_catalog.requests) == 1
    assert agent.post("/responses", json={"model": CHAT, "input": "Hi", "service_tier": "default"}).status_code == 200
    assert "service_tier" not in agent_catalog.requests[-1].body  # the vendor's standard tier: nothing to send


@pytest.mark.parametrize(
    ("model", "requested", "reported", "answered"),
    [
        (RESPONSES, "priority", "default", "default"),
        (CHAT, "auto", "default", "default"),
        (CLAUDE, "priority", "standard", "default"),
        (RESPONSES, "priority", None, None),
    ],
    ids=["responses", "chat", "anthropic-standard", "not-reported"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_answer_service_tier_is_the_tier_served(agent, agent_catalog, model, requested, reported, answered, stream):  # noqa: F811
    """Was: the answer echoed the request's `service_tier`, whatever tier the provider said it served."""
    agent_catalog.service_tier = reported
    body = {"model": model, "input": "Hi", "service_tier": requested, "stream": stream}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    final = events(response)[-1]["response"] if stream else response.json()
    assert final["service_tier"] == answered


# --- text.verbosity, reasoning.summary, prompt_cache_key ----------------------------------------------------


@pytest.mark.parametrize("model", [CLAUDE, CHAT], ids=["anthropic", "chat"])
def test_verbosity_only_openai_takes_is_400(agent, agent_catalog, model):  # noqa: F811
    """Was: dropped on Anthropic and non-OpenAI chat vendors. `medium` (every provider's default) passes."""
    response = agent.post("/responses", json={"model": model, "input": "Hi", "text": {"verbosity": "low"}})
    refused(response, "text.verbosity", "OpenAI")
    assert agent_catalog.requests == []
    assert agent.post("/responses", json={"model": model, "input": "Hi", "text": {"verbosity": "medium"}}).is_success


@pytest.mark.parametrize("model", [CLAUDE, CHAT], ids=["anthropic", "chat"])
def test_reasoning_summary_detailed_is_400_and_auto_is_honoured(agent, agent_catalog, model):  # noqa: F811
    """Was: dropped. `auto` (what Codex sends by default) is the provider's default summary: honoured."""
    body = {"model": model, "input": "Hi", "reasoning": {"effort": "low", "summary": "detailed"}}
    refused(agent.post("/responses", json=body), "reasoning.summary", "openai-responses")
    body["reasoning"]["summary"] = "auto"
    assert agent.post("/responses", json=body).status_code == 200


def test_prompt_cache_key_keeps_a_conversation_on_one_endpoint(agent, agent_catalog):  # noqa: F811
    """Was: dropped on Anthropic. The same key now goes to the endpoint that served it (whose cache holds the
    prefix), as a session id does."""
    common = {
        "base_url": agent_catalog.base_url,
        "api_key_env": "SERVERTOOLS_FAKE_KEY",
        "api_format": "anthropic-messages",
    }
    add_endpoint("acme/cached", "cheapclaude", upstream_model="up-cheap", prompt_price="0.000001", **common)
    add_endpoint("acme/cached", "dearclaude", upstream_model="up-dear", prompt_price="0.000002", **common)
    agent_catalog.model_scripts["up-cheap"] = [Reply(fail_status=503)]  # the cheapest fails once: dearclaude serves
    body = {"model": "acme/cached", "input": "Hi", "prompt_cache_key": "conv-1"}
    assert agent.post("/responses", json=body).status_code == 200
    assert agent_catalog.requests[-1].body["model"] == "up-dear"
    assert agent.post("/responses", json=body).status_code == 200
    assert agent_catalog.requests[-1].body["model"] == "up-dear"  # the same key: the same endpoint
    other = {**body, "prompt_cache_key": "conv-2"}
    assert agent.post("/responses", json=other).status_code == 200
    assert agent_catalog.requests[-1].body["model"] == "up-cheap"


# --- models with an unknown fallback ------------------------------------------------------------------------


def test_unknown_fallback_slug_is_skipped_and_reported(agent, agent_catalog):  # noqa: F811
    """Was: a 404 for the whole request although the first model is served."""
    body = {"model": RESPONSES, "models": ["nope/gone", CHAT], "input": "Hi"}
    response = agent.post("/responses", json=body, headers=METADATA)
    assert response.status_code == 200, response.text
    meta = response.json()["service_metadata"]
    assert meta["skipped_models"] == ["nope/gone"]
    assert [e["model"] for e in meta["endpoints"]["available"]] == [RESPONSES, CHAT]
    unknown_first = agent.post("/responses", json={**body, "model": "nope/gone", "models": [CHAT]})
    assert unknown_first.status_code == 404


# --- function-call arguments stream as they come ------------------------------------------------------------


@pytest.mark.parametrize("model", [CHAT, CLAUDE, RESPONSES], ids=["chat", "anthropic", "responses"])
def test_function_call_arguments_stream_as_the_upstream_sends_them(agent, agent_catalog, model):  # noqa: F811
    """Was: one `response.function_call_arguments.delta` with all the arguments, at the end."""
    pieces = ['{"q"', ': "wea', 'ther"}']
    agent_catalog.script = [Reply(tool_name="lookup", tool_arguments=pieces, finish="tool_calls")]
    body = {"model": model, "input": "Weather?", "tools": [tool("lookup")], "stream": True}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    kinds = [e["type"] for e in events(response)]
    deltas = [e["delta"] for e in events(response) if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == pieces
    added = kinds.index("response.output_item.added")
    assert added < kinds.index("response.function_call_arguments.delta")
    assert kinds.index("response.function_call_arguments.done") > max(
        i for i, k in enumerate(kinds) if k == "response.function_call_arguments.delta"
    )
    final = events(response)[-1]["response"]
    call = final["output"][-1]
    assert call["type"] == "function_call" and call["arguments"] == "".join(pieces) and call["status"] == "completed"
