"""Routing against the fake upstream: fallback across providers and models, failure mapping, streaming errors."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.inference.conftest import add_endpoint, generations
from tests.inference.test_responses import sse_events

KEY_ENV = "FAKE_UPSTREAM_TEST_KEY"
HELLO = "Hello from the fake upstream."


@pytest.fixture
def upstream(fake_upstream, monkeypatch, echo_catalog):
    monkeypatch.setenv(KEY_ENV, "sk-fake-platform")
    monkeypatch.setenv("FAKE_BAD_KEY", "sk-invalid")
    return fake_upstream


def endpoint(
    model: str,
    provider: str,
    upstream_model: str,
    fake,
    *,
    api_format="openai-chat",
    price="0.000001",
    key_env=KEY_ENV,
    **flags,
):
    return add_endpoint(
        model,
        provider,
        api_format=api_format,
        base_url=fake.base_url,
        api_key_env=key_env,
        prompt_price=price,
        completion_price=price,
        upstream_model=upstream_model,
        **flags,
    )


def meta(response) -> dict:
    return response.json()["service_metadata"]


ON = {"X-Service-Metadata": "enabled"}


@pytest.mark.parametrize("api_format", ["openai-chat", "openai-responses", "anthropic-messages"])
def test_fallback_across_providers(http, upstream, api_format):
    endpoint("t/model", "p-broken", "fail-500", upstream, api_format=api_format, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, api_format=api_format, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["output"][0]["content"][0]["text"] == HELLO
    assert meta(response)["attempts"] == [
        {"model": "t/model", "provider": "p-broken", "status": "server"},
        {"model": "t/model", "provider": "p-good", "status": "success"},
    ]
    assert meta(response)["attempt"] == 2 and meta(response)["strategy"] == "fallback"
    assert [r.model for r in upstream.requests] == ["fail-500", "good"]
    assert upstream.last.auth == "sk-fake-platform"
    [row] = generations(1)
    assert (row.provider, row.status, row.input_tokens, row.output_tokens) == ("p-good", "completed", 12, 7)


def test_fallback_across_models(http, upstream):
    endpoint("t/down", "p-one", "fail-529", upstream)
    endpoint("t/up", "p-two", "good", upstream)
    response = http.post("/responses", json={"model": "t/down", "models": ["t/up"], "input": "hi"}, headers=ON)
    assert response.status_code == 200
    assert response.json()["model"] == "t/up"
    assert [a["status"] for a in meta(response)["attempts"]] == ["overloaded", "success"]
    assert meta(response)["requested"] == "t/down"


def test_allow_fallbacks_false_stops_at_first_provider(http, upstream):
    endpoint("t/model", "p-broken", "fail-500", upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    body = {"model": "t/model", "input": "hi", "provider": {"allow_fallbacks": False}}
    response = http.post("/responses", json=body)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == 502
    assert error["metadata"]["provider_name"] == "p-broken" and error["metadata"]["error_type"] == "server"
    assert error["metadata"]["raw"]["error"]["message"] == "fake failure 500"
    assert [r.model for r in upstream.requests] == ["fail-500"]


@pytest.mark.parametrize(
    ("upstream_model", "status", "error_type"),
    [
        ("fail-500", 502, "server"),
        ("fail-529", 529, "provider_overloaded"),
        ("fail-503", 529, "provider_overloaded"),
        ("fail-429", 429, "rate_limit_exceeded"),
        ("garbage-json", 502, "server"),
        ("fail-400", 400, "invalid_request"),
    ],
)
def test_failure_mapping(http, upstream, upstream_model, status, error_type):
    endpoint("t/model", "p-one", upstream_model, upstream)
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == status
    assert error["metadata"]["provider_name"] == "p-one" and error["metadata"]["error_type"] == error_type
    if status == 429:
        assert response.headers["retry-after"] == "7"
    [row] = generations(1)
    assert row.status == "failed" and row.error_code == status


def test_timeout_maps_to_524(http, upstream):
    endpoint("t/model", "p-slow", "slow-first-byte-3000", upstream)
    with override_settings(GATEWAY_UPSTREAM_TOTAL_TIMEOUT=0.3):
        response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 524
    assert response.json()["error"]["metadata"]["error_type"] == "timeout"


def test_every_candidate_rate_limited_is_429_mixed_is_not(http, upstream):
    endpoint("t/model", "p-a", "fail-429", upstream, price="0.000001")
    endpoint("t/model", "p-b", "fail-429", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 429 and response.headers["retry-after"] == "7"
    endpoint("t/other", "p-c", "fail-429", upstream, price="0.000001")
    endpoint("t/other", "p-d", "fail-500", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/other", "input": "hi"})
    assert response.status_code == 502 and response.json()["error"]["metadata"]["provider_name"] == "p-d"


def test_bad_request_does_not_fall_back(http, upstream):
    endpoint("t/model", "p-a", "fail-400", upstream, price="0.000001")
    endpoint("t/model", "p-b", "good", upstream, price="0.000002")
    assert http.post("/responses", json={"model": "t/model", "input": "hi"}).status_code == 400
    assert [r.model for r in upstream.requests] == ["fail-400"]


def test_refused_credential_moves_on(http, upstream):
    endpoint("t/model", "p-badkey", "good", upstream, price="0.000001", key_env="FAKE_BAD_KEY")
    endpoint("t/model", "p-b", "good", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 200
    assert [a["status"] for a in meta(response)["attempts"]] == ["auth", "success"]
    assert "sk-invalid" not in response.text


def test_provider_without_key_is_skipped(http, upstream):
    endpoint("t/model", "p-nokey", "good", upstream, price="0.000001", key_env="UNSET_KEY_ENV_FOR_TEST")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 502
    assert "No provider credentials" in response.json()["error"]["message"]


def test_stream_falls_back_before_first_byte(http, upstream):
    endpoint("t/model", "p-broken", "fail-500", upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": True})
    events = sse_events(response.text)
    assert response.status_code == 200 and events[-1] == "[DONE]"
    deltas = "".join(e["delta"] for e in events[:-1] if e["type"] == "response.output_text.delta")
    assert deltas == HELLO == events[-2]["response"]["output"][0]["content"][0]["text"]
    assert events[-2]["type"] == "response.completed"
    assert events[-2]["response"]["usage"]["input_tokens_details"]["cached_tokens"] == 4


def test_malformed_stream_before_any_event_is_charged_and_not_sent_again(http, upstream):
    # Was: it fell back to the next provider, uncharged. The provider answered 200 and began the stream: it may
    # bill the request, so it is charged its hold and not sent elsewhere (docs/budgets.md).
    endpoint("t/model", "p-bad", "malformed-sse", upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": True})
    assert response.status_code == 502, response.text
    assert "malformed upstream" in response.json()["error"]["message"]
    assert [r.model for r in upstream.requests] == ["malformed-sse"]
    [row] = generations(1)
    assert (row.status, row.provider, row.usage_estimated) == ("failed", "p-bad", True) and row.cost > 0


@pytest.mark.parametrize("upstream_model", ["cut-stream", "error-event"])
def test_error_after_first_byte_is_error_then_failed(http, upstream, upstream_model):
    endpoint("t/model", "p-cut", upstream_model, upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": True})
    assert response.status_code == 200
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    assert [e["type"] for e in events[-3:-1]] == ["error", "response.failed"]
    assert events[-2]["response"]["status"] == "failed" and events[-2]["response"]["error"]["message"]
    assert events[-3]["code"] == "server" and events[-3]["metadata"]["provider_name"] == "p-cut"
    assert events[-2]["response"]["error_type"] == "server"
    assert [e["sequence_number"] for e in events[:-1]] == list(range(len(events) - 1))
    assert [r.model for r in upstream.requests] == [upstream_model]  # no fallback after the first byte
    [row] = generations(1)
    assert row.status == "failed" and row.provider == "p-cut" and row.streamed and row.error_code == 502


def test_sticky_session_keeps_the_endpoint_that_served(http, upstream):
    endpoint("t/model", "p-a", "fail-500", upstream, price="0.000001")
    endpoint("t/model", "p-b", "good", upstream, price="0.000002")
    body = {"model": "t/model", "input": "hi", "session_id": "conv-1"}
    assert http.post("/responses", json=body).status_code == 200
    assert [r.model for r in upstream.requests] == ["fail-500", "good"]
    upstream.reset()
    assert http.post("/responses", json=body).status_code == 200
    assert [r.model for r in upstream.requests] == ["good"]
    upstream.reset()
    http.post("/responses", json={"model": "t/model", "input": "hi"}, headers={"x-session-id": "conv-2"})
    assert [r.model for r in upstream.requests] == ["fail-500", "good"]


def test_tool_call_answer_json_and_stream(http, upstream):
    endpoint("t/tools", "p-a", "tool-call", upstream)
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    response = http.post("/responses", json={"model": "t/tools", "input": "weather?", "tools": tools})
    item = response.json()["output"][0]
    assert item["type"] == "function_call" and item["name"] == "get_weather"
    assert item["arguments"] == '{"city": "Paris"}'
    events = sse_events(
        http.post("/responses", json={"model": "t/tools", "input": "w", "tools": tools, "stream": True}).text
    )
    kinds = [e["type"] for e in events[:-1]]
    assert "response.function_call_arguments.done" in kinds and kinds[-1] == "response.completed"
    assert events[-2]["response"]["output"][0]["arguments"] == '{"city": "Paris"}'
    rows = generations(2)
    assert [r.tool_calls for r in rows] == [1, 1]


def test_cheapest_endpoint_is_tried_first(http, upstream):
    endpoint("t/model", "a-dear", "dear-model", upstream, price="0.00001")
    endpoint("t/model", "z-cheap", "cheap-model", upstream, price="0.000001")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert [r.model for r in upstream.requests] == ["cheap-model"]
    assert [e["provider"] for e in meta(response)["endpoints"]["available"]] == ["z-cheap", "a-dear"]
    body = {"model": "t/model", "input": "hi", "provider": {"order": ["a-dear"]}}
    http.post("/responses", json=body)
    assert upstream.last.model == "dear-model"
