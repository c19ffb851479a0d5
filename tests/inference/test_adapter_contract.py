"""The contract every HTTP adapter keeps, run against the fake upstream on loopback: JSON and stream give
the same answer, the upstream receives a correctly translated request, and every failure maps to the
kind routing acts on."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import time

import orjson
import pytest

from inference.pipeline.context import Credential
from inference.providers.base import (
    Flush,
    FunctionCallDone,
    ProviderError,
    ProviderErrorKind,
    StreamDone,
    TextDelta,
    Timeouts,
    UpstreamCall,
)
from inference.providers.http import close_session
from inference.providers.registry import get_adapter
from tests.conftest import free_port

KEY = "sk-test-0123456789abcdef"
TEXT = "Hello from the fake upstream."
HTTP_FORMATS = ["openai-responses", "openai-chat", "anthropic-messages"]
PATHS = {
    "openai-responses": "/v1/responses",
    "openai-chat": "/v1/chat/completions",
    "anthropic-messages": "/v1/messages",
}
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture(autouse=True)
async def _fresh_session():
    yield
    await close_session()


def make_call(fake, api_format, model="fake-model", *, stream=False, body=None, key=KEY, timeouts=None):
    return UpstreamCall(
        body=body or {"model": "vendor/model", "input": "Say hello"},
        upstream_model=model,
        base_url=fake.base_url,
        credential=Credential(api_key=key),
        stream=stream,
        timeouts=timeouts or Timeouts(connect=2, first_byte=5, read=5),
    )


async def run_stream(adapter, call):
    events = []
    async for event in adapter.stream(call):
        if not isinstance(event, Flush):
            events.append(event)
    return events


async def stream_failure(adapter, call):
    """The ProviderError a stream ends with, and the events it yielded before."""
    events = []
    with pytest.raises(ProviderError) as caught:
        async for event in adapter.stream(call):
            if not isinstance(event, Flush):
                events.append(event)
    return caught.value, events


# --- answers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api_format", [*HTTP_FORMATS, "echo"])
async def test_stream_marks_the_events_of_each_upstream_read_with_one_flush(fake_upstream, api_format):
    adapter = get_adapter(api_format)
    events = [event async for event in adapter.stream(make_call(fake_upstream, api_format, stream=True))]

    kinds = [type(event).__name__ for event in events]
    assert kinds[0] == "TextDelta"  # a Flush never comes first (the first event decides fallback)
    assert kinds[-2:] == ["Flush", "StreamDone"]  # everything before the end was flushed
    assert all(not (a == b == "Flush") for a, b in itertools.pairwise(kinds))  # never an empty group
    assert "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_json_and_stream_give_the_same_text_and_usage(fake_upstream, api_format):
    adapter = get_adapter(api_format)
    result = await adapter.complete(make_call(fake_upstream, api_format))
    events = await run_stream(adapter, make_call(fake_upstream, api_format, stream=True))

    assert result.text == TEXT
    assert (result.status, result.finish_reason, result.incomplete_reason) == ("completed", "stop", None)
    assert result.output[0]["type"] == "message"
    assert result.output[0]["content"][0] == {"type": "output_text", "text": TEXT, "annotations": []} or (
        result.output[0]["content"][0]["text"] == TEXT
    )
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Hello", " from", " the", " fake", " upstream."]
    assert isinstance(events[-1], StreamDone)
    streamed = events[-1].result
    assert streamed.text == "".join(deltas) == result.text
    assert streamed.usage == result.usage
    assert (result.usage.input_tokens, result.usage.cached_tokens) == (12, 4)
    reasoning = 0 if api_format == "anthropic-messages" else 2  # Anthropic does not report reasoning tokens
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (7, reasoning)
    assert result.upstream_id and streamed.upstream_id == result.upstream_id


async def test_echo_adapter_json_and_stream_agree():
    adapter = get_adapter("echo")
    call = UpstreamCall(
        body={"input": "one two"}, upstream_model="echo", base_url="", credential=Credential(""), stream=False
    )
    result = await adapter.complete(call)
    events = await run_stream(adapter, call)
    assert result.text == "Echo: one two"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == events[-1].result.text == result.text


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_tool_call_json_and_stream(fake_upstream, api_format):
    adapter = get_adapter(api_format)
    body = {"input": "Weather in Paris?", "tools": [WEATHER_TOOL]}
    result = await adapter.complete(make_call(fake_upstream, api_format, "tool-call", body=body))
    events = await run_stream(adapter, make_call(fake_upstream, api_format, "tool-call", stream=True, body=body))

    calls = [item for item in result.output if item["type"] == "function_call"]
    assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_fake_1", "get_weather", '{"city": "Paris"}')
    ]
    assert result.finish_reason == "tool_calls"
    done = [e for e in events if isinstance(e, FunctionCallDone)]
    assert done == [FunctionCallDone("call_fake_1", "get_weather", '{"city": "Paris"}')]
    streamed = events[-1].result
    assert [(c["call_id"], c["name"], c["arguments"]) for c in streamed.output if c["type"] == "function_call"] == [
        ("call_fake_1", "get_weather", '{"city": "Paris"}')
    ]
    assert streamed.finish_reason == "tool_calls"


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
@pytest.mark.parametrize(("model", "reason"), [("length", "max_output_tokens"), ("content-filter", "content_filter")])
async def test_cut_answers_are_incomplete(fake_upstream, api_format, model, reason):
    adapter = get_adapter(api_format)
    result = await adapter.complete(make_call(fake_upstream, api_format, model))
    streamed = (await run_stream(adapter, make_call(fake_upstream, api_format, model, stream=True)))[-1].result
    for answer in (result, streamed):
        assert (answer.status, answer.incomplete_reason) == ("incomplete", reason)
        assert answer.text == TEXT


# --- what the upstream received ----------------------------------------------------------------------------

FULL_BODY = {
    "model": "vendor/model",
    "models": ["a/b"],
    "provider": {"allow_fallbacks": False},
    "session_id": "sess-1",
    "trace": {"trace_id": "t"},
    "debug": {"echo_upstream_body": True},
    "plugins": [{"id": "web"}],
    "instructions": "Be brief.",
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
    "tools": [WEATHER_TOOL],
    "tool_choice": "auto",
    "max_output_tokens": 321,
    "temperature": 0.5,
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_upstream_receives_the_translated_request(fake_upstream, api_format, stream):
    adapter = get_adapter(api_format)
    call = make_call(fake_upstream, api_format, "up-model", stream=stream, body=FULL_BODY)
    if stream:
        await run_stream(adapter, call)
    else:
        await adapter.complete(call)
    seen = fake_upstream.last
    body = seen.body
    assert seen.path == PATHS[api_format]
    assert body["model"] == "up-model"
    assert bool(body.get("stream")) is stream
    assert not {"models", "provider", "session_id", "trace", "debug", "plugins"} & body.keys()
    assert body["temperature"] == 0.5
    if api_format == "anthropic-messages":
        assert seen.headers["x-api-key"] == KEY and "authorization" not in seen.headers
        assert seen.headers["anthropic-version"] == "2023-06-01"
        assert body["system"] == "Be brief."
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]
        assert body["tools"] == [
            {"name": "get_weather", "description": "Weather of a city", "input_schema": WEATHER_TOOL["parameters"]}
        ]
        assert body["tool_choice"] == {"type": "auto"}
        assert body["max_tokens"] == 321
        return
    assert seen.headers["authorization"] == f"Bearer {KEY}" and "x-api-key" not in seen.headers
    if api_format == "openai-responses":
        assert body["instructions"] == "Be brief."
        assert body["input"] == FULL_BODY["input"]
        assert body["tools"] == [WEATHER_TOOL]
        assert body["max_output_tokens"] == 321
        assert body["store"] is False
        return
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert body["tools"] == [
        {"type": "function", "function": {k: WEATHER_TOOL[k] for k in ("name", "description", "parameters")}}
    ]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 321
    assert body.get("stream_options") == ({"include_usage": True} if stream else None)


# --- failures -----------------------------------------------------------------------------------------------

FAILURES = [
    ("fail-429", ProviderErrorKind.RATE_LIMITED, 429),
    ("fail-500", ProviderErrorKind.SERVER, 500),
    ("fail-502", ProviderErrorKind.SERVER, 502),
    ("fail-503", ProviderErrorKind.OVERLOADED, 503),
    ("fail-529", ProviderErrorKind.OVERLOADED, 529),
    ("fail-401", ProviderErrorKind.AUTH, 401),
    ("fail-403", ProviderErrorKind.AUTH, 403),
    ("fail-400", ProviderErrorKind.BAD_REQUEST, 400),
    ("fail-404", ProviderErrorKind.BAD_REQUEST, 404),
    ("fail-413", ProviderErrorKind.BAD_REQUEST, 413),
    ("fail-422", ProviderErrorKind.BAD_REQUEST, 422),
    ("fail-504", ProviderErrorKind.TIMEOUT, 504),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
@pytest.mark.parametrize(("model", "kind", "status"), FAILURES)
async def test_http_status_maps_to_kind(fake_upstream, api_format, stream, model, kind, status):
    adapter = get_adapter(api_format)
    call = make_call(fake_upstream, api_format, model, stream=stream)
    if stream:
        error, events = await stream_failure(adapter, call)
        assert events == []
    else:
        with pytest.raises(ProviderError) as caught:
            await adapter.complete(call)
        error = caught.value
    assert (error.kind, error.status, error.before_first_event) == (kind, status, True)
    assert error.retry_after == (7.0 if status == 429 else None)
    assert f"fake failure {status}" in str(error.raw) or status in (401, 503)


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_refused_key_is_auth_and_never_echoed(fake_upstream, api_format):
    adapter = get_adapter(api_format)
    for stream in (False, True):
        call = make_call(fake_upstream, api_format, stream=stream, key="sk-invalid")
        with pytest.raises(ProviderError) as caught:
            await (run_stream(adapter, call) if stream else adapter.complete(call))
        error = caught.value
        assert error.kind is ProviderErrorKind.AUTH and error.retryable
        assert "Incorrect API key provided: ***" in error.message
        assert "sk-invalid" not in error.message and "sk-invalid" not in str(error.raw)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
@pytest.mark.parametrize("model", ["slow-first-byte-3000", "slow-first-event-3000", "hang"])
async def test_no_first_byte_in_time_is_timeout(fake_upstream, api_format, stream, model):
    adapter = get_adapter(api_format)
    # A stream's first event must come within `first_byte`; a JSON answer as a whole within `total`.
    timeouts = Timeouts(connect=1, first_byte=0.3, read=0.5, total=0.3)
    call = make_call(fake_upstream, api_format, model, stream=stream, timeouts=timeouts)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await (run_stream(adapter, call) if stream else adapter.complete(call))
    assert caught.value.kind is ProviderErrorKind.TIMEOUT
    assert caught.value.before_first_event is True
    # A call that was sent may be billed (a JSON answer not complete in time, a stream without its first event
    # in time): routing must not send it to another provider.
    assert caught.value.maybe_billed and not caught.value.retryable
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_slow_first_byte_within_the_limit_answers(fake_upstream, api_format):
    call = make_call(fake_upstream, api_format, "slow-first-byte-200", timeouts=Timeouts(first_byte=3))
    assert (await get_adapter(api_format).complete(call)).text == TEXT


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_stream_stalling_between_events_is_timeout_after_first_event(fake_upstream, api_format):
    call = make_call(
        fake_upstream, api_format, "slow-stream-1500", stream=True, timeouts=Timeouts(connect=1, first_byte=1, read=0.3)
    )
    error, events = await stream_failure(get_adapter(api_format), call)
    assert error.kind is ProviderErrorKind.TIMEOUT


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_stream_cut_in_the_middle_is_server_after_first_event(fake_upstream, api_format):
    error, events = await stream_failure(
        get_adapter(api_format), make_call(fake_upstream, api_format, "cut-stream", stream=True)
    )
    assert error.kind is ProviderErrorKind.SERVER
    assert any(isinstance(e, TextDelta) for e in events)
    assert error.before_first_event is False


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_json_body_cut_short_is_server(fake_upstream, api_format):
    with pytest.raises(ProviderError) as caught:
        await get_adapter(api_format).complete(make_call(fake_upstream, api_format, "cut-stream"))
    assert caught.value.kind is ProviderErrorKind.SERVER


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_malformed_sse_is_server(fake_upstream, api_format):
    error, events = await stream_failure(
        get_adapter(api_format), make_call(fake_upstream, api_format, "malformed-sse", stream=True)
    )
    assert error.kind is ProviderErrorKind.SERVER
    assert "malformed" in error.message
    assert error.before_first_event is (not events)
    assert error.maybe_billed and not error.retryable  # a 200 stream the provider may bill: not re-sent


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_garbage_json_is_server(fake_upstream, api_format, stream):
    adapter = get_adapter(api_format)
    call = make_call(fake_upstream, api_format, "garbage-json", stream=stream)
    with pytest.raises(ProviderError) as caught:
        await (run_stream(adapter, call) if stream else adapter.complete(call))
    assert caught.value.kind is ProviderErrorKind.SERVER
    assert caught.value.before_first_event is True
    assert caught.value.maybe_billed and not caught.value.retryable  # a 200 answer the provider may bill


@pytest.mark.parametrize(
    ("api_format", "kind"),
    [
        ("openai-responses", ProviderErrorKind.SERVER),
        ("openai-chat", ProviderErrorKind.SERVER),
        ("anthropic-messages", ProviderErrorKind.OVERLOADED),
    ],
)
async def test_error_event_mid_stream(fake_upstream, api_format, kind):
    error, events = await stream_failure(
        get_adapter(api_format), make_call(fake_upstream, api_format, "error-event", stream=True)
    )
    assert error.kind is kind
    assert error.before_first_event is False
    assert any(isinstance(e, TextDelta) for e in events)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_connection_refused_is_server(api_format, stream):
    adapter = get_adapter(api_format)
    call = UpstreamCall(
        body={"input": "hi"},
        upstream_model="m",
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        credential=Credential(KEY),
        stream=stream,
    )
    with pytest.raises(ProviderError) as caught:
        await (run_stream(adapter, call) if stream else adapter.complete(call))
    assert caught.value.kind is ProviderErrorKind.SERVER
    assert KEY not in caught.value.message


# --- cancellation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_closing_a_stream_closes_the_upstream_connection(fake_upstream, api_format):
    stream = get_adapter(api_format).stream(make_call(fake_upstream, api_format, "slow-stream", stream=True))
    async with contextlib.aclosing(stream):
        async for event in stream:
            assert isinstance(event, TextDelta)
            break
    assert await fake_upstream.wait_disconnected(5)


@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_cancelling_a_call_closes_the_upstream_connection(fake_upstream, api_format):
    task = asyncio.create_task(get_adapter(api_format).complete(make_call(fake_upstream, api_format, "hang")))
    while not fake_upstream.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_upstream.wait_disconnected(5)


async def test_cookies_an_upstream_sets_are_never_sent_back(fake_upstream):
    """One pooled client serves every organization: a cookie one answer sets must not ride on the next request
    (which may carry another tenant's key). `localhost`, not an IP address: cookie jars ignore IP hosts."""
    fake_upstream.response_headers = {"Set-Cookie": "tenant=acme; Path=/; Max-Age=3600"}
    adapter = get_adapter("openai-responses")
    call = make_call(fake_upstream, "openai-responses")
    call = dataclasses.replace(call, base_url=call.base_url.replace("127.0.0.1", "localhost"))
    await adapter.complete(call)
    await adapter.complete(call)
    assert fake_upstream.requests[0].path == fake_upstream.requests[1].path == "/v1/responses"
    assert "cookie" not in fake_upstream.requests[1].headers


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", HTTP_FORMATS)
async def test_the_headers_on_the_wire(fake_upstream, api_format, stream):
    """What the upstream receives besides the adapter's own headers: aiohttp's Accept and Accept-Encoding, the
    body's length, never a User-Agent (the session skips it; inference.providers.http adds the others itself)."""
    adapter = get_adapter(api_format)
    call = make_call(fake_upstream, api_format, stream=stream)
    if stream:
        await run_stream(adapter, call)
    else:
        await adapter.complete(call)
    headers = fake_upstream.last.headers
    assert "user-agent" not in headers
    assert headers["accept"] == "*/*" and headers["accept-encoding"].startswith("gzip, deflate")
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(orjson.dumps(adapter.build_request(call).json)))
    assert headers["host"] == fake_upstream.base_url.split("/")[2]
