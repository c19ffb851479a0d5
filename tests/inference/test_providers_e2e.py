"""Every provider adapter end to end: the official SDK → the gateway → the fake upstream in that provider's
wire format, JSON and streamed, with what the upstream received and what was accounted."""

from __future__ import annotations

import pytest
from openai import OpenAI

from tests.inference.conftest import add_endpoint, generations, wait_idle

FORMATS = ["openai-responses", "openai-chat", "anthropic-messages"]
PATHS = {
    "openai-responses": "/v1/responses",
    "openai-chat": "/v1/chat/completions",
    "anthropic-messages": "/v1/messages",
}
TEXT = "Hello from the fake upstream."
KEY = "sk-platform-e2e-0123456789"
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def provider_client(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    """`(client, add)`: the SDK on the gateway, and `add(api_format, upstream_model)` → a routable model slug."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)

    def add(api_format: str, upstream_model: str = "fake-model") -> str:
        slug = f"fake/{api_format}-{upstream_model}"
        add_endpoint(
            slug,
            f"fake-{api_format}",
            api_format=api_format,
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=upstream_model,
        )
        clear_caches()
        return slug

    client = OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    yield client, add
    wait_idle()


@pytest.mark.parametrize("api_format", FORMATS)
def test_json_answer_through_each_adapter(provider_client, fake_upstream, api_format):
    client, add = provider_client
    model = add(api_format)
    response = client.responses.create(model=model, instructions="Be brief.", input="Say hello", max_output_tokens=99)

    assert response.output_text == TEXT
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 7)
    assert response.usage.input_tokens_details.cached_tokens == 4
    seen = fake_upstream.last
    assert seen.path == PATHS[api_format]
    assert seen.body["model"] == "fake-model"
    assert seen.auth == KEY
    assert "session_id" not in seen.body and "provider" not in seen.body
    if api_format == "anthropic-messages":
        assert (seen.body["system"], seen.body["max_tokens"]) == ("Be brief.", 99)
    elif api_format == "openai-chat":
        assert seen.body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert seen.body["max_tokens"] == 99
    else:
        assert (seen.body["instructions"], seen.body["max_output_tokens"]) == ("Be brief.", 99)
    wait_idle()  # accounting runs after the answer
    (row,) = generations(1)
    assert (row.status, row.input_tokens, row.output_tokens, row.cached_tokens) == ("completed", 12, 7, 4)
    assert row.provider == f"fake-{api_format}" and row.upstream_id


@pytest.mark.parametrize("api_format", FORMATS)
def test_streamed_answer_through_each_adapter(provider_client, fake_upstream, api_format):
    client, add = provider_client
    model = add(api_format)
    deltas, final = [], None
    with client.responses.stream(model=model, input="Say hello") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()

    assert "".join(deltas) == final.output_text == TEXT
    assert final.usage.output_tokens == 7
    assert fake_upstream.last.stream is True
    if api_format == "openai-chat":
        assert fake_upstream.last.body["stream_options"] == {"include_usage": True}
    wait_idle()  # accounting runs after the answer
    (row,) = generations(1)
    assert (row.status, row.streamed, row.output_tokens) == ("completed", True, 7)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", FORMATS)
def test_tool_call_through_each_adapter(provider_client, fake_upstream, api_format, stream):
    client, add = provider_client
    model = add(api_format, "tool-call")
    if stream:
        with client.responses.stream(model=model, input="Weather in Paris?", tools=[TOOL]) as events:
            for _ in events:
                pass
            response = events.get_final_response()
    else:
        response = client.responses.create(model=model, input="Weather in Paris?", tools=[TOOL])

    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("call_fake_1", "get_weather", '{"city": "Paris"}')]
    sent_tools = fake_upstream.last.body["tools"]
    names = [t.get("name") or t.get("function", {}).get("name") for t in sent_tools]
    assert names == ["get_weather"]
    wait_idle()  # accounting runs after the answer
    (row,) = generations(1)
    assert row.tool_calls == 1


@pytest.mark.parametrize("api_format", FORMATS)
def test_failing_adapter_falls_back_to_the_next_model(provider_client, fake_upstream, api_format):
    client, add = provider_client
    failing = add(api_format, "fail-529")
    working = add(api_format)
    response = client.responses.create(model=failing, extra_body={"models": [working]}, input="Say hello")

    assert response.output_text == TEXT
    assert [r.model for r in fake_upstream.requests] == ["fail-529", "fake-model"]


def test_upstream_past_the_total_limit_is_524(provider_client, fake_upstream, settings):
    import openai

    client, add = provider_client
    settings.GATEWAY_UPSTREAM_TOTAL_TIMEOUT = 0.3  # a JSON answer as a whole
    model = add("openai-chat", "slow-first-byte-3000")
    with pytest.raises(openai.APIStatusError) as caught:
        client.responses.create(model=model, input="hi")
    assert caught.value.status_code == 524
    assert caught.value.body["metadata"] == {
        "provider_name": "fake-openai-chat",
        "raw": "upstream timed out",
        "error_type": "timeout",
    }
