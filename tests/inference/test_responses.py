"""POST /api/v1/responses through the real loopback server: the official SDK, raw SSE, errors, accounting."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest
from openai import OpenAI

from tests.inference.conftest import generations


def sse_events(text: str) -> list:
    """The `data:` payloads of an SSE body, in order ([DONE] kept as a string)."""
    events = []
    for frame in text.split("\n\n"):
        for line in frame.splitlines():
            if line.startswith("data: "):
                data = line[6:]
                events.append(data if data == "[DONE]" else orjson.loads(data))
    return events


def test_sdk_create_returns_text_and_every_field(sdk: OpenAI):
    response = sdk.responses.create(
        model="echo/echo-1",
        input="hello world",
        instructions="Be nice",
        metadata={"team": "a"},
        temperature=0.5,
        top_p=0.9,
        max_output_tokens=50,
    )
    assert response.output_text == "Echo: hello world"
    assert response.object == "response" and response.status == "completed"
    assert response.id.startswith("resp_") and response.model == "echo/echo-1"
    assert response.instructions == "Be nice" and response.metadata == {"team": "a"}
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.5, 0.9, 50)
    message = response.output[0]
    assert (message.type, message.role, message.status) == ("message", "assistant", "completed")
    assert message.content[0].type == "output_text" and message.content[0].annotations == []
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (4, 3, 7)
    assert usage.input_tokens_details.cached_tokens == 0 and usage.output_tokens_details.reasoning_tokens == 0
    extra = response.usage.model_extra
    assert extra["is_byok"] is False
    assert Decimal(str(extra["cost"])) == Decimal("0.000010")  # 4 × 0.000001 + 3 × 0.000002
    assert response.completed_at is not None and response.completed_at >= response.created_at


def test_sdk_stream_final_text_equals_joined_deltas(sdk: OpenAI):
    with sdk.responses.stream(model="echo/echo-1", input="one two three four") as stream:
        events = list(stream)
        final = stream.get_final_response()
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == 5
    assert "".join(deltas) == final.output_text == "Echo: one two three four"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.usage.output_tokens == 5


def test_sdk_create_stream_true_event_order(sdk: OpenAI):
    events = list(sdk.responses.create(model="echo/echo-1", input="hi there", stream=True))
    kinds = [e.type for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert events[-1].response.output_text == deltas == "Echo: hi there"
    item_ids = {e.item_id for e in events if hasattr(e, "item_id")}
    assert item_ids == {events[-1].response.output[0].id}


def test_raw_stream_sequence_numbers_and_done(http):
    response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi", "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    assert [e["sequence_number"] for e in events[:-1]] == list(range(len(events) - 1))
    delta = next(e for e in events if e != "[DONE]" and e["type"] == "response.output_text.delta")
    assert set(delta) == {"type", "item_id", "output_index", "content_index", "delta", "logprobs", "sequence_number"}
    assert "event: response.created\n" in response.text


def test_max_output_tokens_gives_incomplete(sdk: OpenAI):
    response = sdk.responses.create(model="echo/echo-1", input="a b c d e f", max_output_tokens=2)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    events = list(sdk.responses.create(model="echo/echo-1", input="a b c d e f", max_output_tokens=2, stream=True))
    assert events[-1].type == "response.incomplete"


def test_debug_echo_upstream_body_comes_first_with_hashed_safety_identifier(http):
    body = {
        "model": "echo/echo-1",
        "input": "hi",
        "stream": True,
        "debug": {"echo_upstream_body": True},
        "safety_identifier": "end-user-7",
        "metadata": {"a": "b"},
    }
    events = sse_events(http.post("/responses", json=body).text)
    assert events[0]["type"] == "response.debug" and events[0]["sequence_number"] == 0
    upstream = events[0]["debug"]["echo_upstream_body"]
    assert upstream["input"] == "hi" and upstream["model"] == "echo-1"
    assert upstream["safety_identifier"] != "end-user-7" and len(upstream["safety_identifier"]) == 64
    assert "debug" not in upstream and "metadata" not in upstream
    assert "end-user-7" not in orjson.dumps(upstream).decode()
    assert events[1]["type"] == "response.created"


@pytest.mark.parametrize("header", ["X-Service-Metadata", "X-Service-Experimental-Metadata"])
def test_service_metadata_with_header(http, header):
    response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi"}, headers={header: "enabled"})
    meta = response.json()["service_metadata"]
    assert meta["attempt"] == 1
    assert meta["attempts"] == [{"model": "echo/echo-1", "provider": "echo", "status": "success"}]
    assert meta["endpoints"] == {
        "available": [{"model": "echo/echo-1", "provider": "echo", "selected": True}],
        "total": 1,
    }
    assert meta["is_byok"] is False and meta["region"] == "global" and meta["requested"] == "echo/echo-1"
    assert meta["strategy"] == "direct" and meta["pipeline"] == [] and "echo" in meta["summary"]


def test_no_service_metadata_without_header(http):
    for headers in ({}, {"X-Service-Metadata": "disabled"}):
        response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi"}, headers=headers)
        assert "service_metadata" not in response.json()


def test_service_metadata_on_error_envelope(http):
    response = http.post(
        "/responses", json={"model": "nope/none", "input": "hi"}, headers={"X-Service-Metadata": "enabled"}
    )
    assert response.status_code == 404
    assert response.json()["service_metadata"]["requested"] == "nope/none"


def test_generation_row_for_success(sdk: OpenAI, org):
    sdk.responses.create(
        model="echo/echo-1",
        input="hello there",
        metadata={"k": "v"},
        extra_body={"session_id": "sess-1", "trace": {"trace_id": "t-1"}},
    )
    [row] = generations(1)
    assert row.status == "completed" and row.streamed is False and row.ingress_format == "responses"
    assert row.organization_id == org.organization.id and row.workspace_id == org.workspace.id
    assert row.key_hash == org.inference_hash and row.user_id == org.admin.id
    assert (row.model, row.provider, row.requested_model) == ("echo/echo-1", "echo", "echo/echo-1")
    assert row.model_permaslug == "echo/echo-1-2026" and row.endpoint is not None
    assert (row.input_tokens, row.output_tokens) == (2, 3)
    assert row.cost == Decimal("0.000008")
    assert row.session_id == "sess-1" and row.trace == {"trace_id": "t-1"} and row.metadata == {"k": "v"}
    assert row.upstream_id.startswith("echo-") and row.finish_reason == "stop"
    assert row.latency_ms is not None and row.ttft_ms is not None and row.completed_at is not None
    assert row.input_modalities == ["text"] and row.context_bucket == "1k"


def test_generation_row_for_stream_and_session_header(http):
    http.post(
        "/responses",
        json={"model": "echo/echo-1", "input": "hi", "stream": True},
        headers={"x-session-id": "from-header"},
    )
    http.post(
        "/responses",
        json={"model": "echo/echo-1", "input": "hi", "session_id": "from-body"},
        headers={"x-session-id": "from-header"},
    )
    rows = generations(2)
    assert [r.streamed for r in rows] == [True, False]
    assert [r.session_id for r in rows] == ["from-header", "from-body"]


def test_generation_row_for_failure(http):
    response = http.post("/responses", json={"model": "nope/none", "input": "hi"})
    assert response.status_code == 404
    [row] = generations(1)
    assert row.status == "failed" and row.error_code == 404 and row.requested_model == "nope/none"
    assert row.cost == 0 and row.provider == ""
