"""End to end: a request through POST /api/v1/responses (the real loopback server) is recorded, queued in the
outbox with its Generation row, and delivered by the worker to the fake receiver, also after an outage."""

from __future__ import annotations

import json
import time

import pytest
from django.db import OperationalError

from inference.models import Generation
from observability.models import OutboxEntry
from observability.worker import Worker, WorkerConfig
from tests.fakes.fake_receiver import FakeReceiver
from tests.inference.conftest import wait_idle
from tests.observability.test_formats import attrs, parse_otlp

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/observability/destinations"


def generations(expected: int = 1, timeout: float = 10.0) -> list[Generation]:
    """The Generation rows once `expected` exist. Polls after the server finished its requests and retries
    reads that hit SQLite's shared-cache table lock while the server thread writes."""
    deadline = time.monotonic() + timeout
    wait_idle()
    while True:
        try:
            rows = list(Generation.objects.order_by("created_at"))
        except OperationalError:
            rows = []
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.02)


def worker() -> Worker:
    return Worker(
        WorkerConfig(concurrency=1, max_attempts=5, backoff_base=0, backoff_max=0, timeout=5, poll_interval=0.05)
    )


def add_destination(org, **body):
    response = org.client().post(URL, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["data"]


def test_a_response_reaches_the_webhook_and_the_otlp_collector(http, org, receiver):
    add_destination(org, name="hook", type="webhook", config={"url": f"{receiver.url}/hook"})
    add_destination(org, name="otel", type="otel-collector", config={"endpoint": receiver.url})
    body = {
        "model": "echo/echo-1",
        "input": "hello world",
        "session_id": "sess-e2e",
        "trace": {"trace_name": "e2e", "generation_name": "greet", "team": "platform"},
    }
    response = http.post("/responses", json=body)
    assert response.status_code == 200, response.text
    (generation,) = generations(1)
    assert OutboxEntry.objects.filter(generation_id=generation.id).count() == 2
    assert worker().drain() == 2
    by_path = {r.path: r for r in receiver.requests}
    trace = by_path["/hook"].json()["trace"]
    assert trace["id"] == str(generation.id) and trace["model"] == "echo/echo-1" and trace["provider"] == "echo"
    assert trace["input"] == "hello world" and trace["output_text"] == "Echo: hello world"
    assert trace["usage"]["input_tokens"] == generation.input_tokens > 0
    assert trace["usage"]["output_tokens"] == generation.output_tokens > 0
    assert trace["trace_name"] == "e2e" and trace["metadata"] == {"team": "platform"}
    assert trace["session_id"] == "sess-e2e" and trace["latency_ms"] is not None
    span = parse_otlp(by_path["/v1/traces"].body).resource_spans[0].scope_spans[0].spans[0]
    assert span.name == "greet" and attrs(span)["gen_ai.usage.output_tokens"] == generation.output_tokens
    assert json.loads(attrs(span)["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Echo: hello world"
    assert set(OutboxEntry.objects.values_list("status", flat=True)) == {"delivered"}


def test_a_streamed_response_recorded_while_the_receiver_is_down_is_delivered_after(http, org):
    receiver = FakeReceiver().start()
    port = receiver.port
    receiver.stop()
    add_destination(org, name="hook", type="webhook", config={"url": f"{receiver.url}/hook"}, privacy_mode=True)
    with http.stream("POST", "/responses", json={"model": "echo/echo-1", "input": "one two", "stream": True}) as r:
        assert r.status_code == 200
        r.read()
    (generation,) = generations(1)
    delivery = worker()
    assert delivery.run_once() == 1
    row = OutboxEntry.objects.get(generation_id=generation.id)
    assert row.status == "pending" and row.attempts == 1 and row.last_error
    back = FakeReceiver(port).start()
    try:
        assert delivery.drain() == 1
        (received,) = back.requests
        trace = received.json()["trace"]
        assert trace["id"] == str(generation.id) and trace["streamed"] is True and trace["privacy_mode"] is True
        assert "input" not in trace and "output_text" not in trace
        row.refresh_from_db()
        assert row.status == "delivered" and row.attempts == 2
    finally:
        back.stop()
