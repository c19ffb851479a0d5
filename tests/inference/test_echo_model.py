"""The offline `echo/echo-1` model honours tools and structured output, through the loopback server on the three
wire formats (the official openai and anthropic SDKs): a call to an offered tool with arguments valid against its
schema (`tool_choice` honoured), an answer built from tool results, JSON valid against `response_format` /
`text.format`, the same when streamed, plain text echoed as before, and word counts as usage."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import pytest

from tests.inference.conftest import generations

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": WEATHER}},
]
PROMPT = "get_weather for Paris in fahrenheit over 3 days"
# What pydantic writes for a model with a nested model list, an enum, an optional field and a recursive type.
PYDANTIC_SCHEMA = {
    "$defs": {
        "Mood": {"enum": ["happy", "sad"], "title": "Mood", "type": "string"},
        "Step": {
            "properties": {
                "title": {"type": "string"},
                "children": {"items": {"$ref": "#/$defs/Step"}, "type": "array"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "required": ["title", "children"],
            "type": "object",
        },
    },
    "properties": {
        "name": {"type": "string", "minLength": 3, "maxLength": 20},
        "age": {"type": "integer", "exclusiveMinimum": 0},
        "mood": {"$ref": "#/$defs/Mood"},
        "steps": {"items": {"$ref": "#/$defs/Step"}, "type": "array", "minItems": 2},
        "email": {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name", "age", "mood", "steps", "email", "tags"],
    "type": "object",
    "additionalProperties": False,
}


def _chat_call(sdk, **options):
    return sdk.chat.completions.create(
        model="echo/echo-1", messages=[{"role": "user", "content": PROMPT}], tools=CHAT_TOOLS, **options
    )


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_loop(sdk, stream):
    if stream:
        chunks = list(_chat_call(sdk, stream=True, stream_options={"include_usage": True}))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        (call_delta,) = [d.tool_calls[0] for d in deltas if d.tool_calls]
        name, arguments, call_id = call_delta.function.name, call_delta.function.arguments, call_delta.id
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finish == ["tool_calls"] and chunks[-1].usage.completion_tokens > 0
    else:
        answer = _chat_call(sdk)
        assert answer.choices[0].finish_reason == "tool_calls" and answer.choices[0].message.content is None
        (call,) = answer.choices[0].message.tool_calls
        name, arguments, call_id = call.function.name, call.function.arguments, call.id
    assert name == "get_weather"  # the tool the user's text names, not the first offered
    args = json.loads(arguments)
    jsonschema.validate(args, WEATHER)
    assert args == {"city": PROMPT, "unit": "fahrenheit", "days": 3}  # enum mentioned, the number written

    messages = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "75 F and sunny"},
    ]
    final = sdk.chat.completions.create(model="echo/echo-1", messages=messages, tools=CHAT_TOOLS)
    assert final.choices[0].finish_reason == "stop"
    assert final.choices[0].message.content == "Echo: get_weather returned 75 F and sunny"
    # word counts: the prompt (8 words) and the tool result (4) read; 7 words written
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (12, 7)


def test_tool_choice_is_honoured(sdk):
    none = _chat_call(sdk, tool_choice="none")
    assert none.choices[0].message.content == f"Echo: {PROMPT}" and not none.choices[0].message.tool_calls
    named = _chat_call(sdk, tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert [(c.function.name, c.function.arguments) for c in named.choices[0].message.tool_calls] == [
        ("get_time", "{}")
    ]
    # required after a tool result: a tool not called yet since the user spoke
    history = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    again = sdk.chat.completions.create(model="echo/echo-1", messages=history, tools=CHAT_TOOLS, tool_choice="required")
    assert again.choices[0].message.tool_calls[0].function.name == "get_time"


def test_plain_text_still_echoes(sdk):
    answer = sdk.chat.completions.create(model="echo/echo-1", messages=[{"role": "user", "content": "hello  there"}])
    assert answer.choices[0].message.content == "Echo: hello there"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (2, 3)


@pytest.mark.parametrize("stream", [False, True])
def test_responses_json_schema(sdk, stream):
    fmt = {"type": "json_schema", "name": "person", "schema": PYDANTIC_SCHEMA, "strict": True}
    prompt = "Ada is 36 and happy"
    if stream:
        with sdk.responses.stream(model="echo/echo-1", input=prompt, text={"format": fmt}) as events:
            deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
            response = events.get_final_response()
        assert len(deltas) > 5 and "".join(deltas) == response.output_text
    else:
        response = sdk.responses.create(model="echo/echo-1", input=prompt, text={"format": fmt})
    value = json.loads(response.output_text)
    jsonschema.validate(value, PYDANTIC_SCHEMA)
    assert (value["name"], value["age"], value["mood"]) == (prompt, 36, "happy")
    assert len(value["steps"]) == 2 and value["email"] == "echo@example.com"
    assert response.usage.output_tokens == len(response.output_text.split())
    (row,) = generations(1)
    assert row.output_tokens == response.usage.output_tokens


def test_responses_tool_call_and_answer_from_results(sdk):
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": True}]
    first = sdk.responses.create(model="echo/echo-1", input=PROMPT, tools=tools)
    (call,) = first.output
    assert call.type == "function_call" and call.name == "get_weather"
    jsonschema.validate(json.loads(call.arguments), WEATHER)
    fmt = {
        "type": "json_schema",
        "name": "report",
        "schema": {
            "type": "object",
            "properties": {"temp": {"type": "number"}, "summary": {"type": "string"}},
            "required": ["temp", "summary"],
        },
    }
    inputs = [
        {"role": "user", "content": PROMPT},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "21.5 degrees"},
    ]
    final = sdk.responses.create(model="echo/echo-1", input=inputs, tools=tools, text={"format": fmt})
    assert json.loads(final.output_text) == {"temp": 21.5, "summary": "21.5 degrees"}


def test_json_object_follows_a_schema_written_in_the_prompt(sdk):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    messages = [
        {"role": "system", "content": f"Reply in JSON matching this schema:\n{json.dumps(schema, indent=2)}"},
        {"role": "user", "content": "What is 6 times 7? 42"},
    ]
    answer = sdk.chat.completions.create(
        model="echo/echo-1", messages=messages, response_format={"type": "json_object"}
    )
    assert json.loads(answer.choices[0].message.content) == {"answer": 6}
    bare = sdk.chat.completions.create(
        model="echo/echo-1", messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"}
    )
    assert json.loads(bare.choices[0].message.content) == {"echo": "hi"}


def test_json_cut_by_max_tokens_is_incomplete(sdk):
    fmt = {"type": "json_schema", "name": "person", "schema": PYDANTIC_SCHEMA}
    response = sdk.responses.create(model="echo/echo-1", input="Ada", text={"format": fmt}, max_output_tokens=3)
    assert response.status == "incomplete" and response.usage.output_tokens == 3


@pytest.fixture
def claude(gateway_server, org, echo_catalog):
    return anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_messages_tool_use_and_result(claude, stream):
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": WEATHER}]
    messages = [{"role": "user", "content": PROMPT}]
    if stream:
        with claude.messages.stream(model="echo/echo-1", max_tokens=100, messages=messages, tools=tools) as events:
            kinds = [e.delta.type for e in events if e.type == "content_block_delta"]
            message = events.get_final_message()
        assert "input_json_delta" in kinds
    else:
        message = claude.messages.create(model="echo/echo-1", max_tokens=100, messages=messages, tools=tools)
    assert message.stop_reason == "tool_use"
    (use,) = message.content
    assert use.type == "tool_use" and use.name == "get_weather"
    jsonschema.validate(use.input, WEATHER)
    follow = [
        *messages,
        {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "cloudy"}]},
    ]
    final = claude.messages.create(model="echo/echo-1", max_tokens=100, messages=follow, tools=tools)
    assert final.stop_reason == "end_turn" and final.content[0].text == "Echo: get_weather returned cloudy"


def test_messages_output_format_and_forced_tool(claude):
    schema = {
        "type": "object",
        "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}},
        "required": ["mood"],
        "additionalProperties": False,
    }
    message = claude.messages.create(
        model="echo/echo-1",
        max_tokens=100,
        messages=[{"role": "user", "content": "I am sad"}],
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}},
    )
    assert json.loads(message.content[0].text) == {"mood": "sad"}
    forced = claude.messages.create(
        model="echo/echo-1",
        max_tokens=100,
        messages=[{"role": "user", "content": "I am happy"}],
        tools=[{"name": "record", "input_schema": schema}],
        tool_choice={"type": "tool", "name": "record"},
    )
    assert forced.content[0].input == {"mood": "happy"}
