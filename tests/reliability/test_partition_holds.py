"""Budget holds across a database partition (PostgreSQL behind a loopback proxy; short time limits via settings).

- A hold whose statement reached the database but whose answer did not (the replies held back past
  `GATEWAY_DB_DEADLINE_SECONDS`): the request is answered 503 and reached no provider. The hold committed all the
  same; the process releases it (at $0) once the database answers again, on the budget keeper's next turn
  (budgets/keeper.py: a serving process runs it every third of `GATEWAY_BUDGET_RESERVATION_TTL`; the test runs
  it by hand), so it neither blocks the budget nor is charged later.
- A request that reached the provider while the database went away for longer than
  `GATEWAY_ACCOUNTING_RETRY_SECONDS` (the row's writes fail as an unreachable database does; SQLite and
  PostgreSQL): its row could not be written, so its hold is left unsettled; once it expires the reaper charges
  it and writes the request's row (`interrupted`, the hold as cost) from the hold.
"""

from __future__ import annotations

import time
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.db import OperationalError

from budgets import keeper
from budgets.models import SpendCounter, SpendReservation
from inference import recorder
from inference.models import Generation
from tests.inference.conftest import add_endpoint, wait_idle
from tests.reliability.test_database_blackhole import black_hole  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": "echo/echo-1", "input": "hi"}


def key_counter(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="api-key", scope_id=org.inference_hash)


def limit_key(gateway_server, org, amount: float) -> None:
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.management_key}"}, timeout=30
    ) as api:
        assert api.patch(f"/keys/{org.inference_hash}", json={"limit": amount}).status_code == 200


def test_a_503_whose_hold_committed_unseen_releases_it(http, gateway_server, org, black_hole, settings):  # noqa: F811
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 2
    limit_key(gateway_server, org, 100)
    assert http.post("/responses", json=BODY).status_code == 200  # warm: the loop's connection is open
    wait_idle()
    spent = key_counter(org).spent_units
    kept = 0
    for _ in range(4):  # a read of the gateway's (a policy recheck) may time out first: then no hold was sent
        black_hole.reply_delay = 2.5  # the statements arrive and run; their answers come after the deadline
        assert http.post("/responses", json=BODY).status_code == 503
        black_hole.reply_delay = 0
        time.sleep(3)  # the delayed answers went out: whatever the database committed is there
        kept = SpendReservation.objects.filter(reaped_at__isnull=True).count()
        if kept:
            break
        assert http.post("/responses", json=BODY).status_code == 200  # the loop's connection open again
        wait_idle()
        spent = key_counter(org).spent_units
    assert kept >= 1 and key_counter(org).reserved_units > 0  # a hold committed, unseen by the gateway

    keeper.turn()  # the keeper's next turn, the database answering again

    assert not SpendReservation.objects.exists()
    counter = key_counter(org)
    assert counter.reserved_units == 0 and counter.spent_units == spent  # released at $0, not charged
    time.sleep(settings.GATEWAY_BUDGET_RESERVATION_TTL)
    out = StringIO()
    call_command("budgets_reap", stdout=out)
    assert "charged 0 expired" in out.getvalue()
    assert not Generation.objects.exclude(status="completed").exists()  # the 503s reached no provider: no row
    assert http.post("/responses", json=BODY).status_code == 200


def test_a_request_that_reached_the_provider_gets_its_row_from_its_hold(
    gateway_server, org, settings, fake_upstream, monkeypatch
):
    """The database accepts the hold, then is unreachable for the row's writes (the partition begins while the
    provider works) for longer than the accounting retries: the row comes from the hold."""
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 2
    settings.GATEWAY_ACCOUNTING_RETRY_SECONDS = 0.5
    add_endpoint(
        "fake/slow-first-byte-300",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0.000001",
        completion_price="0.001",
    )
    limit_key(gateway_server, org, 100)

    async def unreachable(contexts):
        raise OperationalError("connection to server failed: the network is partitioned")

    monkeypatch.setattr(recorder, "_write", unreachable)
    response = httpx.post(
        f"{gateway_server.url}/api/v1/responses",
        json={"model": "fake/slow-first-byte-300", "input": "hi", "max_output_tokens": 40},
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    assert response.status_code == 200 and len(fake_upstream.requests) == 1  # the provider answered
    wait_idle(timeout=20)
    monkeypatch.undo()  # the database is back
    assert not Generation.objects.exists()
    hold = SpendReservation.objects.get()  # not settled: the row could not be written
    time.sleep(settings.GATEWAY_BUDGET_RESERVATION_TTL + 0.2)

    keeper.turn()  # or `budgets_reap`: the expired hold is charged, with the request's row

    row = Generation.objects.get()
    assert row.status == "interrupted" and row.cost * 10**10 == hold.amount_units and row.usage_estimated
    assert row.key_hash == org.inference_hash and row.requested_model == "fake/slow-first-byte-300"
    counter = key_counter(org)
    assert counter.spent_units == hold.amount_units and counter.reserved_units == 0
    out = StringIO()
    call_command("budgets_reconcile", stdout=out)
    assert "0 drifted" in out.getvalue()
