"""Upstream faults seen end to end (client → gateway → fake upstream), where tests/inference does not already.

Covered elsewhere (see docs/reliability.md): a stream cut mid-way and an in-stream error event
(tests/inference/test_fallback.py::test_error_after_first_byte_is_error_then_failed), garbage JSON
(test_failure_mapping), a JSON slow first byte (test_timeout_maps_to_524, without the row). Here: the
Generation row of timeouts (JSON and streamed, before the head and after it), connection refused with and
without a fallback, and answers of 10 MB under and over GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.conftest import free_port
from tests.inference.conftest import add_endpoint, generations
from tests.inference.test_fallback import KEY_ENV, ON, endpoint
from tests.inference.test_responses import sse_events

pytestmark = pytest.mark.django_db(transaction=True)

TEN_MB_PIECES = ["x" * 1_000_000] * 10  # 10,000,000 characters of text in 10 pieces
ONE_MIB = 1024 * 1024


def envelope(response, status: int) -> dict:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == status and error["message"]
    return error


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("upstream_model", ["slow-first-byte-3000", "slow-first-event-3000"])
def test_no_first_byte_in_time_is_524_and_a_failed_row(http, upstream, stream, upstream_model):
    endpoint("t/model", "p-slow", upstream_model, upstream)
    # JSON: the whole answer must come within TOTAL; a stream's first event within FIRST_BYTE
    limits = {"GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT": 0.3, "GATEWAY_UPSTREAM_READ_TIMEOUT": 0.3}
    with override_settings(**limits, GATEWAY_UPSTREAM_TOTAL_TIMEOUT=0.3):
        response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": stream})
    error = envelope(response, 524)  # before the first byte, even a stream answers with the envelope
    assert error["metadata"]["error_type"] == "timeout" and error["metadata"]["provider_name"] == "p-slow"
    [row] = generations(1)
    assert (row.status, row.error_code) == ("failed", 524)
    # sent and never answered (JSON), or no first event in time (stream): the provider had the request and may
    # bill it, so it is charged its hold, marked estimated (docs/budgets.md)
    assert row.usage_estimated and row.output_tokens > 0 and row.cost > 0
    assert row.latency_ms < 2500  # the gateway gave up at the limit, not when the upstream answered


@pytest.mark.parametrize("upstream_model", ["slow-first-byte-3000", "slow-first-event-3000"])
def test_a_stream_without_a_first_event_in_time_is_not_sent_to_the_next_provider(http, upstream, upstream_model):
    # Was: it fell back to the next provider, uncharged. The first provider had the request and may be generating
    # (and billing) it: sending it elsewhere would pay twice. As a JSON call past its total limit
    # (tests/reliability/test_upstream_hostile.py); the money side: tests/budgets/test_money.py.
    endpoint("t/model", "p-slow", upstream_model, upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    with override_settings(GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT=0.3):
        body = {"model": "t/model", "input": "hi", "stream": True}
        response = http.post("/responses", json=body, headers=ON)
    error = envelope(response, 524)
    assert error["metadata"]["provider_name"] == "p-slow"
    assert [r.model for r in upstream.requests] == [upstream_model]
    [row] = generations(1)
    assert (row.status, row.provider, row.usage_estimated) == ("failed", "p-slow", True) and row.cost > 0


def refused_endpoint(model: str, provider: str, price: str) -> None:
    """A provider whose base URL is a loopback port nobody listens on."""
    add_endpoint(
        model,
        provider,
        api_format="openai-chat",
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key_env=KEY_ENV,
        prompt_price=price,
        completion_price=price,
        upstream_model="good",
    )


@pytest.mark.parametrize("stream", [False, True])
def test_connection_refused_is_502_and_a_failed_row(http, upstream, stream):
    refused_endpoint("t/model", "p-down", "0.000001")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": stream})
    error = envelope(response, 502)
    assert error["metadata"]["error_type"] == "server" and error["metadata"]["provider_name"] == "p-down"
    assert "cannot connect to upstream" in error["message"]
    [row] = generations(1)
    assert (row.status, row.error_code, row.output_tokens) == ("failed", 502, 0)
    assert "cannot connect to upstream" in row.error_message
    assert upstream.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_connection_refused_falls_back(http, upstream, stream):
    refused_endpoint("t/model", "p-down", "0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": stream}, headers=ON)
    assert response.status_code == 200
    if stream:
        final = sse_events(response.text)[-2]
        assert final["type"] == "response.completed"
        attempts = final["response"]["service_metadata"]["attempts"]
    else:
        attempts = response.json()["service_metadata"]["attempts"]
    assert [(a["provider"], a["status"]) for a in attempts] == [("p-down", "server"), ("p-good", "success")]
    [row] = generations(1)
    assert (row.status, row.provider, row.output_tokens) == ("completed", "p-good", 7)


# --- 10 MB answers ------------------------------------------------------------------------------------------


def test_ten_megabyte_json_answer_is_relayed_under_the_default_cap(http, upstream):
    upstream.reply_pieces = TEN_MB_PIECES
    endpoint("t/big", "p-big", "big", upstream)
    response = http.post("/responses", json={"model": "t/big", "input": "hi"})
    assert response.status_code == 200
    assert len(response.json()["output"][0]["content"][0]["text"]) == 10_000_000
    [row] = generations(1)
    assert row.status == "completed"


def test_ten_megabyte_stream_is_relayed_under_the_default_cap(http, upstream):
    upstream.reply_pieces = TEN_MB_PIECES
    endpoint("t/big", "p-big", "big", upstream)
    with http.stream("POST", "/responses", json={"model": "t/big", "input": "hi", "stream": True}) as response:
        assert response.status_code == 200
        text = "".join(response.iter_text())
    events = sse_events(text)
    deltas = [e["delta"] for e in events[:-1] if e["type"] == "response.output_text.delta"]
    assert sum(map(len, deltas)) == 10_000_000
    assert events[-2]["type"] == "response.completed"
    [row] = generations(1)
    assert row.status == "completed" and row.streamed


def test_json_answer_over_the_cap_is_502_and_a_failed_row(http, upstream):
    upstream.reply_pieces = TEN_MB_PIECES
    endpoint("t/big", "p-big", "big", upstream)
    with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=ONE_MIB):
        response = http.post("/responses", json={"model": "t/big", "input": "hi"})
    error = envelope(response, 502)
    assert f"upstream response larger than {ONE_MIB} bytes" in error["message"]
    assert error["metadata"]["error_type"] == "server" and error["metadata"]["provider_name"] == "p-big"
    assert len(response.content) < 2000  # nothing of the oversized body is relayed
    [row] = generations(1)
    assert (row.status, row.error_code) == ("failed", 502)
    assert "GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES" in row.error_message


def test_json_answer_over_the_cap_is_charged_and_not_sent_to_the_fallback(http, upstream):
    """The provider produced (and may bill) the oversized answer: the request is charged its hold and is not
    sent to the next candidate, which would bill it a second time (docs/budgets.md)."""
    upstream.reply_pieces = TEN_MB_PIECES
    endpoint("t/big", "p-big", "big", upstream)
    body = {"model": "t/big", "models": ["echo/echo-1"], "input": "hi"}  # the fallback is the in-process echo
    with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=ONE_MIB):
        response = http.post("/responses", json=body, headers=ON)
    error = envelope(response, 502)
    assert error["metadata"]["provider_name"] == "p-big"
    [row] = generations(1)
    assert (row.status, row.provider) == ("failed", "p-big")
    assert row.usage_estimated and row.cost > 0


def test_stream_over_the_cap_ends_with_error_and_response_failed(http, upstream):
    upstream.reply_pieces = TEN_MB_PIECES
    endpoint("t/big", "p-big", "slow-stream-100", upstream)  # frames 100 ms apart: the first delta goes out alone
    with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=ONE_MIB + 100_000):
        response = http.post("/responses", json={"model": "t/big", "input": "hi", "stream": True})
    assert response.status_code == 200  # the first delta (1 MB) went out before the cap was reached
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    assert [e["type"] for e in events[-3:-1]] == ["error", "response.failed"]
    assert "larger than" in events[-3]["message"] and events[-3]["code"] == "server"
    assert events[-2]["response"]["status"] == "failed"
    # Only the first 1 MB delta was relayed (it is repeated by the *.done events and response.failed's output);
    # the other 9 MB were never read.
    deltas = [e["delta"] for e in events[:-1] if e["type"] == "response.output_text.delta"]
    assert sum(map(len, deltas)) == 1_000_000
    assert len(response.content) < 6 * ONE_MIB
    [row] = generations(1)
    assert (row.status, row.error_code, row.streamed) == ("failed", 502, True)
