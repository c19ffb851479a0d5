"""Each `/responses` field that reaches the provider, end to end: the field is sent through the loopback gateway
and the fake upstream (in the provider format that carries it) is asserted to receive the translated value; a
field no format of that provider carries is a 400 naming it (nothing accepted and dropped). These tests back
the entries of tests/contract/field_registry.py (the OpenAPI walk in tests/contract)."""

from __future__ import annotations

import pytest

from inference.handler import hash_identifier
from tests.servertools.conftest import agent, agent_catalog  # noqa: F401  (fixtures)

RESPONSES = "fakeai/agent"  # openai-responses format
CHAT = "fakechat/agent"  # openai-chat format (an OpenAI-compatible vendor, not api.openai.com)
CLAUDE = "fakeclaude/agent"  # anthropic-messages format
TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Find a thing",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    "strict": True,
}
SCHEMA_FORMAT = {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}


def case(field: str, model: str, extra: dict, check):
    return pytest.param(model, extra, check, id=field)


REACHES_UPSTREAM = [
    case("temperature", RESPONSES, {"temperature": 0.3}, lambda b: b["temperature"] == 0.3),
    case("top_p", RESPONSES, {"top_p": 0.4}, lambda b: b["top_p"] == 0.4),
    case("max_output_tokens", RESPONSES, {"max_output_tokens": 33}, lambda b: b["max_output_tokens"] == 33),
    case("instructions", RESPONSES, {"instructions": "Be brief."}, lambda b: b["instructions"] == "Be brief."),
    case(
        "parallel_tool_calls",
        RESPONSES,
        {"tools": [TOOL], "parallel_tool_calls": False},
        lambda b: b["parallel_tool_calls"] is False,
    ),
    case(
        "tool_choice", RESPONSES, {"tools": [TOOL], "tool_choice": "required"}, lambda b: b["tool_choice"] == "required"
    ),
    case(
        "tool_choice.type",
        RESPONSES,
        {"tools": [TOOL], "tool_choice": {"type": "function", "name": "lookup"}},
        lambda b: b["tool_choice"] == {"type": "function", "name": "lookup"},
    ),
    case("tools", RESPONSES, {"tools": [TOOL]}, lambda b: b["tools"] == [TOOL]),
    case(
        "tools-chat",
        CHAT,
        {"tools": [TOOL]},
        lambda b: b["tools"][0]["function"]
        == {"name": "lookup", "description": "Find a thing", "parameters": TOOL["parameters"], "strict": True},
    ),
    case("text.format", RESPONSES, {"text": {"format": SCHEMA_FORMAT}}, lambda b: b["text"]["format"] == SCHEMA_FORMAT),
    case(
        "text.format-chat",
        CHAT,
        {"text": {"format": SCHEMA_FORMAT}},
        lambda b: b["response_format"]
        == {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True}},
    ),
    case(
        "text.format.json_object-chat",
        CHAT,
        {"text": {"format": {"type": "json_object"}}},
        lambda b: b["response_format"] == {"type": "json_object"},
    ),
    case(
        "text.format-anthropic",
        CLAUDE,
        {"text": {"format": SCHEMA_FORMAT}},
        lambda b: b["output_format"] == {"type": "json_schema", "schema": {"type": "object"}},
    ),
    case("text.verbosity", RESPONSES, {"text": {"verbosity": "low"}}, lambda b: b["text"]["verbosity"] == "low"),
    case(
        "reasoning.effort",
        RESPONSES,
        {"reasoning": {"effort": "high", "summary": "auto"}},
        lambda b: b["reasoning"] == {"effort": "high", "summary": "auto"},
    ),
    case("reasoning.effort-chat", CHAT, {"reasoning": {"effort": "low"}}, lambda b: b["reasoning_effort"] == "low"),
    case(
        "reasoning.enabled", RESPONSES, {"reasoning": {"enabled": True}}, lambda b: b["reasoning"]["effort"] == "medium"
    ),
    case(
        "reasoning.max_tokens-anthropic",
        CLAUDE,
        {"reasoning": {"enabled": True, "max_tokens": 2048}, "max_output_tokens": 4096},
        lambda b: b["thinking"] == {"type": "enabled", "budget_tokens": 2048},
    ),
    case("prompt_cache_key", RESPONSES, {"prompt_cache_key": "k1"}, lambda b: b["prompt_cache_key"] == "k1"),
    case("service_tier", RESPONSES, {"service_tier": "flex"}, lambda b: b["service_tier"] == "flex"),
    case("truncation", RESPONSES, {"truncation": "auto"}, lambda b: b["truncation"] == "auto"),
    case(
        "include",
        RESPONSES,
        {"include": ["reasoning.encrypted_content"]},
        lambda b: b["include"] == ["reasoning.encrypted_content"],
    ),
    case("top_logprobs", RESPONSES, {"top_logprobs": 3}, lambda b: b["top_logprobs"] == 3),
    case("top_logprobs-chat", CHAT, {"top_logprobs": 3}, lambda b: b["logprobs"] is True and b["top_logprobs"] == 3),
    case(
        "prompt",
        RESPONSES,
        {"prompt": {"id": "pmpt_1", "variables": {"city": "Paris"}}},
        lambda b: b["prompt"] == {"id": "pmpt_1", "variables": {"city": "Paris"}},
    ),
    case("frequency_penalty", CHAT, {"frequency_penalty": 0.5}, lambda b: b["frequency_penalty"] == 0.5),
    case("presence_penalty", CHAT, {"presence_penalty": -0.5}, lambda b: b["presence_penalty"] == -0.5),
    case("top_k", CHAT, {"top_k": 7}, lambda b: b["top_k"] == 7),
    case("top_k-anthropic", CLAUDE, {"top_k": 7}, lambda b: b["top_k"] == 7),
    case(
        "cache_control",
        CLAUDE,
        {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
        lambda b: b["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"},
    ),
    case(
        "input",
        RESPONSES,
        {"input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]}]},
        lambda b: b["input"]
        == [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]}],
    ),
    case(
        "input-anthropic",
        CLAUDE,
        {"input": [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Hi"}]},
        lambda b: b["system"] == "Rules." and b["messages"][0]["role"] == "user",
    ),
    case("modalities", RESPONSES, {"modalities": ["text"]}, lambda b: "modalities" not in b),
]


@pytest.mark.parametrize(("model", "extra", "check"), REACHES_UPSTREAM)
def test_field_reaches_the_upstream(agent, agent_catalog, model, extra, check):  # noqa: F811
    body = {"model": model, "input": "Hello", **extra}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    sent = agent_catalog.requests[-1].body
    assert check(sent), sent


@pytest.mark.parametrize(
    ("user_field", "value"),
    [("user", "customer-42"), ("safety_identifier", "customer-43")],
    ids=["user", "safety_identifier"],
)
def test_end_user_identity_reaches_the_upstream_hashed(agent, agent_catalog, org, user_field, value):  # noqa: F811
    response = agent.post("/responses", json={"model": RESPONSES, "input": "Hello", user_field: value})
    assert response.status_code == 200, response.text
    sent = agent_catalog.requests[-1].body
    assert sent["safety_identifier"] == hash_identifier(org.organization.id, value) and "user" not in sent
    assert value not in str(sent)


def test_metadata_is_echoed_to_the_client_and_not_sent(agent, agent_catalog):  # noqa: F811
    body = {"model": RESPONSES, "input": "Hello", "metadata": {"order": "A-17"}}
    response = agent.post("/responses", json=body)
    assert response.status_code == 200 and response.json()["metadata"] == {"order": "A-17"}
    assert "metadata" not in agent_catalog.requests[-1].body


@pytest.mark.parametrize("model", [CHAT, CLAUDE], ids=["prompt-chat", "prompt-anthropic"])
def test_stored_prompt_is_refused_where_no_candidate_stores_prompts(agent, agent_catalog, model):  # noqa: F811
    response = agent.post("/responses", json={"model": model, "input": "Hello", "prompt": {"id": "pmpt_1"}})
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith("prompt:") and "providers that store prompts" in message
    assert agent_catalog.requests == []


OMITTED_FOR_THE_PROVIDER_FORMAT = [
    pytest.param(RESPONSES, {"frequency_penalty": 0.5}, "frequency_penalty", id="frequency_penalty-responses"),
    pytest.param(RESPONSES, {"top_k": 5}, "top_k", id="top_k-responses"),
    pytest.param(CLAUDE, {"presence_penalty": 0.5}, "presence_penalty", id="presence_penalty-anthropic"),
]


@pytest.mark.parametrize(("model", "extra", "named"), OMITTED_FOR_THE_PROVIDER_FORMAT)
def test_sampling_parameter_the_provider_format_cannot_carry_is_left_out(agent, agent_catalog, model, extra, named):  # noqa: F811
    """A router parameter is left out for an endpoint whose format has no member for it, and the answer says so."""
    body = {"model": model, "input": "Hello", **extra}
    response = agent.post("/responses", json=body, headers={"X-Service-Metadata": "enabled"})
    assert response.status_code == 200, response.text
    assert named not in agent_catalog.requests[-1].body
    assert response.headers["x-service-omitted-parameters"] == named
    assert response.json()["service_metadata"]["omitted_parameters"] == [named]


REFUSED_BY_THE_PROVIDER_FORMAT = [
    pytest.param(CLAUDE, {"truncation": "auto"}, "truncation", id="truncation-anthropic"),
    pytest.param(
        CHAT, {"include": ["file_search_call.results"]}, "include value 'file_search_call.results'", id="include-chat"
    ),
]


@pytest.mark.parametrize(("model", "extra", "named"), REFUSED_BY_THE_PROVIDER_FORMAT)
def test_field_the_provider_format_cannot_carry_is_400(agent, agent_catalog, model, extra, named):  # noqa: F811
    response = agent.post("/responses", json={"model": model, "input": "Hello", **extra})
    assert response.status_code == 400, response.text
    assert f"{named} is not supported by this provider's API format" in response.json()["error"]["message"]
    assert agent_catalog.requests == []


@pytest.mark.parametrize("include_usage", [True, False])
def test_stream_options_the_stream_always_ends_with_the_usage(agent, agent_catalog, include_usage):  # noqa: F811
    body = {"model": RESPONSES, "input": "Hello", "stream": True, "stream_options": {"include_usage": include_usage}}
    body["stream_options"]["include_obfuscation"] = False
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    final = [line for line in response.text.splitlines() if line.startswith("data: {")][-1]
    assert '"type":"response.completed"' in final and '"input_tokens":12' in final
    assert "stream_options" not in agent_catalog.requests[-1].body
