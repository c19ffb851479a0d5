"""POST /api/v1/chat/completions with the official openai SDK, unmodified, over the loopback server: against
an OpenAI-chat, an OpenAI-responses and an Anthropic-format fake upstream, JSON and streamed, tool calling
round trips, JSON output, refusals with a 400 naming the member, and the Generation row."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from openai import OpenAI

from tests.inference.conftest import add_endpoint, generations, wait_idle

FORMATS = ["openai-chat", "openai-responses", "anthropic-messages"]
TEXT = "Hello from the fake upstream."
KEY = "sk-platform-chat-0123456789"
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@pytest.fixture
def chat(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
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


def upstream_messages(seen, api_format: str) -> list:
    """What the upstream received as the conversation, in its own format."""
    return seen.body["input"] if api_format == "openai-responses" else seen.body["messages"]


@pytest.mark.parametrize("api_format", FORMATS)
def test_json_completion(chat, fake_upstream, api_format):
    client, add = chat
    model = add(api_format)
    completion = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}],
        max_completion_tokens=99,
        temperature=0.5,
    )
    assert completion.object == "chat.completion" and completion.model == model
    choice = completion.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == ("assistant", TEXT, "stop")
    assert choice.message.tool_calls is None
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 7, 19)
    assert usage.prompt_tokens_details.cached_tokens == 4
    assert usage.model_extra["cost"] > 0 and usage.model_extra["is_byok"] is False
    seen = fake_upstream.last
    if api_format == "anthropic-messages":
        assert (seen.body["system"], seen.body["max_tokens"], seen.body["temperature"]) == ("Be brief.", 99, 0.5)
        assert seen.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]
    elif api_format == "openai-chat":
        assert seen.body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello"},
        ]
        assert seen.body["max_tokens"] == 99
    else:
        assert seen.body["input"][0] == {"type": "message", "role": "system", "content": "Be brief."}
        assert seen.body["max_output_tokens"] == 99
    (row,) = generations(1)
    assert (row.ingress_format, row.status, row.streamed) == ("chat-completions", "completed", False)
    assert (row.input_tokens, row.output_tokens, row.cached_tokens) == (12, 7, 4)
    assert float(row.cost) == pytest.approx(usage.model_extra["cost"])
    assert completion.id == f"chatcmpl-{row.id}"


@pytest.mark.parametrize("api_format", FORMATS)
def test_stream_with_include_usage(chat, fake_upstream, api_format):
    client, add = chat
    model = add(api_format)
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Say hello"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == TEXT
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 7
    assert chunks[-1].usage.model_extra["cost"] > 0
    assert all(c.usage is None for c in chunks[:-1])
    assert fake_upstream.last.stream is True
    (row,) = generations(1)
    assert (row.ingress_format, row.streamed, row.output_tokens) == ("chat-completions", True, 7)


def test_stream_without_include_usage_has_no_usage_chunk_and_ends_with_done(chat, org, gateway_server):
    client, add = chat
    model = add("openai-chat")
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as http:
        response = http.post(
            "/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True},
            headers={"Authorization": f"Bearer {org.inference_key}"},
        )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in response.text.split("\n\n") if f]
    assert frames[-1] == "data: [DONE]"
    chunks = [json.loads(f[len("data: ") :]) for f in frames[:-1]]
    assert all("usage" not in c for c in chunks) and chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", FORMATS)
def test_tool_calling_round_trip(chat, fake_upstream, api_format, stream):
    client, add = chat
    model = add(api_format, "tool-call")
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        chunks = list(client.chat.completions.create(model=model, messages=messages, tools=[TOOL], stream=True))
        calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finish == ["tool_calls"]
        call = (calls[0].id, calls[0].function.name, calls[0].function.arguments)
        assert len(calls) == 1 and calls[0].index == 0
    else:
        completion = client.chat.completions.create(model=model, messages=messages, tools=[TOOL])
        assert completion.choices[0].finish_reason == "tool_calls"
        (tool_call,) = completion.choices[0].message.tool_calls
        call = (tool_call.id, tool_call.function.name, tool_call.function.arguments)
    assert call[1] == "get_weather" and json.loads(call[2]) == {"city": "Paris"}
    sent = fake_upstream.last.body["tools"]
    assert [t.get("name") or t["function"]["name"] for t in sent] == ["get_weather"]

    model_text = add(api_format)  # the second turn: the tool result goes back, a text answer comes
    follow_up = [
        *messages,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}],
        },
        {"role": "tool", "tool_call_id": call[0], "content": "18 degrees and sunny"},
    ]
    completion = client.chat.completions.create(model=model_text, messages=follow_up, tools=[TOOL])
    assert completion.choices[0].message.content == TEXT
    conversation = json.dumps(upstream_messages(fake_upstream.last, api_format))
    assert "18 degrees and sunny" in conversation and call[0] in conversation
    if api_format == "anthropic-messages":
        user_turn = fake_upstream.last.body["messages"][-1]
        assert user_turn["content"][0] == {
            "type": "tool_result",
            "tool_use_id": call[0],
            "content": "18 degrees and sunny",
        }
    elif api_format == "openai-chat":
        assert fake_upstream.last.body["messages"][-1] == {
            "role": "tool",
            "tool_call_id": call[0],
            "content": "18 degrees and sunny",
        }
    else:
        assert fake_upstream.last.body["input"][-1]["type"] == "function_call_output"
    rows = generations(2)
    assert len(rows) == 2 and {r.ingress_format for r in rows} == {"chat-completions"}
    assert rows[0].tool_calls == 1


@pytest.mark.parametrize("api_format", FORMATS)
def test_response_format_json_schema(chat, fake_upstream, api_format):
    client, add = chat
    model = add(api_format)
    response_format = {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True}}
    client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Answer"}], response_format=response_format
    )
    body = fake_upstream.last.body
    if api_format == "openai-chat":
        assert body["response_format"] == response_format
    elif api_format == "openai-responses":
        assert body["text"]["format"] == {"type": "json_schema", "name": "reply", "schema": SCHEMA, "strict": True}
    else:
        assert body["output_format"] == {"type": "json_schema", "schema": SCHEMA}
        assert "structured-outputs" in fake_upstream.last.headers["anthropic-beta"]


def test_json_object_and_options_reach_a_chat_upstream(chat, fake_upstream):
    client, add = chat
    model = add("openai-chat")
    client.chat.completions.create(
        model=model,
        messages=[
            {
                "role": "developer",
                "content": [{"type": "text", "text": "Use JSON."}],
            },
            {"role": "user", "content": "x"},
        ],
        response_format={"type": "json_object"},
        stop=["END"],
        seed=7,
        logit_bias={"50256": -100},
        max_tokens=20,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        top_p=0.9,
        reasoning_effort="low",
        parallel_tool_calls=False,
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        user="end-user-1",
    )
    body = fake_upstream.last.body
    assert body["response_format"] == {"type": "json_object"}
    assert (body["stop"], body["seed"], body["logit_bias"], body["max_tokens"]) == (["END"], 7, {"50256": -100}, 20)
    assert (body["presence_penalty"], body["frequency_penalty"], body["top_p"]) == (0.5, 0.25, 0.9)
    assert body["reasoning_effort"] == "low" and body["parallel_tool_calls"] is False
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["messages"][0] == {"role": "system", "content": "Use JSON."}


def test_images_reach_an_anthropic_upstream(chat, fake_upstream):
    client, add = chat
    model = add("anthropic-messages")
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}], max_tokens=50)
    blocks = fake_upstream.last.body["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}


TOOL_TURN = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


def test_a_tool_message_may_name_the_function_it_answers(chat, echo_catalog):
    """Router-API clients (the AI SDK's router provider) send the function's name on tool messages."""
    client, _ = chat
    messages = [*TOOL_TURN[:2], {**TOOL_TURN[2], "name": "get_weather"}]
    answer = client.chat.completions.create(model="echo/echo-1", messages=messages)
    assert answer.choices[0].message.content == "Echo: get_weather returned sunny"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"n": 2}, "n"),
        ({"logprobs": "yes"}, "logprobs"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"functions": []}, "functions"),
        ({"store": True}, "store"),
        ({"temperature": 3}, "temperature"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"max_tokens": 5, "max_completion_tokens": 6}, "max_tokens"),
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        ({"messages": [{"role": "function", "content": "x", "name": "f"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": "x", "name": "bob"}]}, "messages[0].name"),
        ({"messages": [*TOOL_TURN[:2], {**TOOL_TURN[2], "name": "other"}]}, "messages[2].name"),
        ({"messages": [*TOOL_TURN[:2], {**TOOL_TURN[2], "name": 3}]}, "messages[2].name"),
        ({"messages": []}, "messages"),
        ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0].type"),
        ({"web_search_options": {}}, "web_search_options"),
    ],
)
def test_refused_members_are_400_naming_them(chat, extra, field):
    client, _ = chat
    with pytest.raises(openai.BadRequestError) as caught:  # extra_body: sent as it is, past the SDK's own checks
        client.chat.completions.create(
            model="echo/echo-1", messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )
    assert caught.value.status_code == 400
    assert caught.value.message.startswith(f"{field}: ") or f"'{field}: " in caught.value.message
    assert caught.value.body["metadata"]["field"] == field
    assert generations(0) == []


@pytest.mark.parametrize(("extra", "field"), [({"stop": ["x"]}, "stop"), ({"seed": 3}, "seed")])
def test_a_sampling_parameter_the_provider_format_cannot_carry_is_left_out_and_said(chat, fake_upstream, extra, field):
    client, add = chat
    model = add("openai-responses")
    answer = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": "hi"}], **extra
    )
    assert field not in fake_upstream.last.body
    assert answer.headers["x-service-omitted-parameters"] == field


def test_bad_key_is_authentication_error(gateway_server, echo_catalog):
    client = OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="echo/echo-1", messages=[{"role": "user", "content": "hi"}])
    wait_idle()


def test_echo_through_chat_with_stop_and_a_preset(chat, org, echo_catalog):
    client, _ = chat
    completion = client.chat.completions.create(
        model="echo/echo-1", messages=[{"role": "user", "content": "one two three"}], stop="three"
    )
    assert completion.choices[0].message.content == "Echo: one two"
    response = org.client().post(
        "/api/v1/presets/brief/chat/completions",
        {"model": "echo/echo-1", "messages": [{"role": "system", "content": "Be brief."}], "max_tokens": 2},
        format="json",
    )
    assert response.status_code == 200, response.content
    completion = client.chat.completions.create(
        model="@preset/brief", messages=[{"role": "user", "content": "alpha beta gamma"}]
    )
    assert completion.choices[0].message.content == "Echo: alpha" and completion.choices[0].finish_reason == "length"
    assert completion.model == "echo/echo-1"


@pytest.mark.parametrize("api_format", FORMATS)
def test_reasoning_comes_back_as_message_reasoning(chat, api_format):
    client, add = chat
    model = add(api_format, "reasoning")
    completion = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Think"}])
    message = completion.choices[0].message
    assert message.content == TEXT and message.model_extra["reasoning"] == "Thinking it over."
    chunks = list(client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}], stream=True))
    reasoning = [c.choices[0].delta.model_extra.get("reasoning") for c in chunks if c.choices]
    assert "".join(r for r in reasoning if r) == "Thinking it over."
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == TEXT
