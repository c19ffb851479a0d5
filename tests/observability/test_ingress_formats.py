"""A Chat Completions request and a Messages request go through the same pipeline as /responses: each leaves
exactly one Generation row (with its ingress format), settles the workspace budget at the recorded cost, and
reaches an observability destination (the webhook of the fake receiver) with its input and output."""

from __future__ import annotations

from decimal import Decimal

import pytest

from budgets.models import SpendCounter, SpendReservation
from observability.models import OutboxEntry
from tests.inference.conftest import wait_idle
from tests.observability.test_end_to_end import add_destination, generations, worker

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = {
    "chat-completions": (
        "/chat/completions",
        {"model": "echo/echo-1", "messages": [{"role": "user", "content": "hello world"}], "max_tokens": 10},
    ),
    "messages": (
        "/messages",
        {"model": "echo/echo-1", "max_tokens": 10, "messages": [{"role": "user", "content": "hello world"}]},
    ),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("ingress", list(REQUESTS))
def test_one_row_a_settled_budget_and_a_delivered_trace(http, org, receiver, ingress, stream):
    add_destination(org, name="hook", type="webhook", config={"url": f"{receiver.url}/hook"})
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 5}, format="json"
    )
    assert response.status_code == 200, response.content
    path, body = REQUESTS[ingress]
    answer = http.post(path, json={**body, "stream": stream, "session_id": "sess-wire"})
    assert answer.status_code == 200, answer.text
    if stream:
        assert answer.headers["content-type"].startswith("text/event-stream")
    else:
        assert answer.json().get("object", answer.json().get("type")) in ("chat.completion", "message")

    (row,) = generations(1)
    wait_idle()
    assert (row.ingress_format, row.status, row.streamed, row.session_id) == (ingress, "completed", stream, "sess-wire")
    assert row.cost > 0 and row.output_tokens == 3
    counter = SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")
    assert counter.spent_usd == row.cost and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()

    assert OutboxEntry.objects.filter(generation_id=row.id).count() == 1
    assert worker().drain() == 1
    (delivery,) = [r for r in receiver.requests if r.path == "/hook"]
    trace = delivery.json()["trace"]
    assert trace["id"] == str(row.id) and trace["model"] == "echo/echo-1"
    assert "hello world" in str(trace["input"]) and trace["output_text"] == "Echo: hello world"
    assert trace["usage"]["output_tokens"] == 3 and Decimal(str(trace["usage"].get("cost", row.cost))) >= 0
