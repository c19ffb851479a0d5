"""A client that goes away cancels the upstream call at once, and the request is still accounted for."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.inference.conftest import generations
from tests.inference.test_fallback import endpoint


@pytest.fixture
def upstream(fake_upstream, monkeypatch, echo_catalog):
    monkeypatch.setenv("FAKE_UPSTREAM_TEST_KEY", "sk-fake-platform")
    return fake_upstream


def test_stream_disconnect_cancels_upstream_and_records_cancelled(gateway_server, org, http, upstream):
    endpoint("t/slow", "p-slow", "slow-stream-400", upstream)
    started = time.monotonic()
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST",
            f"{gateway_server.url}/api/v1/responses",
            json={"model": "t/slow", "input": "hello there friend", "stream": True},
            headers={"Authorization": f"Bearer {org.inference_key}"},
        ) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if "response.output_text.delta" in line:
                break
    # 5 frames 400 ms apart would take 2 s; the upstream must see the close well before that.
    assert upstream.disconnected.wait(1.5), "the upstream connection was not closed"
    assert time.monotonic() - started < 2.0
    [row] = generations(1)
    assert row.status == "cancelled" and row.streamed and row.provider == "p-slow"
    assert row.output_tokens > 0 and row.input_tokens > 0 and row.cost > 0  # estimated from what was streamed
    assert row.ttft_ms is not None


def test_json_disconnect_cancels_hanging_upstream(gateway_server, org, http, upstream):
    endpoint("t/hang", "p-hang", "hang", upstream)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{gateway_server.url}/api/v1/responses",
            json={"model": "t/hang", "input": "hi"},
            headers={"Authorization": f"Bearer {org.inference_key}"},
            timeout=httpx.Timeout(10, read=0.5),
        )
    assert upstream.disconnected.wait(3), "the upstream connection was not closed"
    [row] = generations(1)
    assert row.status == "cancelled" and not row.streamed and row.requested_model == "t/hang"
    # the provider was asked and may bill it whole: charged the worst case, marked as an estimate
    assert row.cost > 0 and row.usage_estimated
