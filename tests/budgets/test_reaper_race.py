"""The reaper against LIVE holds: no request is ever charged twice.

A hold lives `GATEWAY_BUDGET_RESERVATION_TTL` seconds unless its process renews it (budgets/keeper.py). During a
database stall longer than that the process cannot renew, and another process's reaper (its keeper, or the
operator's `budgets_reap`, with a working connection) charges the hold as spent and writes the request's row
`interrupted`. The request is alive: once the stall ends it writes its own row and settles. What must hold:

- the request is charged its cost once: the counter's `spent` is the row's cost (not the hold plus the cost),
  nothing stays reserved, the counter never exceeds the limit, and `budgets_reconcile` finds no drift;
- the request's own row replaces the `interrupted` one (one row per request).

And the narrower race of a renewal against a reaping: the reaper lists the expired holds, then marks each one;
a hold renewed in between (its process came back) is live and is not reaped (budgets/counter_sql.py
`mark_reaped` checks the expiry again in its own UPDATE).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction

from budgets import keeper
from budgets.counters import reservations_reap, spend_reserve
from budgets.models import SpendCounter, SpendReservation
from inference.models import Generation
from inference.pipeline.context import SpendLimit
from metering.cost import usd_to_units
from tests.budgets.test_concurrency import BASE_DIR, database_url
from tests.inference.conftest import add_endpoint, wait_idle
from tests.reliability.test_database_blackhole import black_hole  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)
SLOW = "fake/slow-first-byte-9000"  # the provider answers after 9 s: the stall and the reaping happen meanwhile
LIMIT_USD = 1


def key_counter(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="api-key", scope_id=org.inference_hash)


def reap_from_another_process(database: str) -> str:
    """`manage.py budgets_reap` in a process of its own, on a direct connection (not the stalled one)."""
    env = {**os.environ, "DATABASE_URL": database, "DJANGO_SECRET_KEY": "reaper-race", "GATEWAY_LOG_LEVEL": "ERROR"}
    done = subprocess.run(
        [sys.executable, "manage.py", "budgets_reap"], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_live_hold_reaped_during_a_database_stall_is_charged_once(
    gateway_server,
    org,
    settings,
    fake_upstream,
    monkeypatch,
    black_hole,  # noqa: F811
):
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 1
    settings.GATEWAY_ACCOUNTING_RETRY_SECONDS = 30  # the row and the settlement wait out the stall
    add_endpoint(
        SLOW,
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0.000001",
        completion_price="0.001",
    )
    headers = {"Authorization": f"Bearer {org.management_key}"}
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", headers=headers, timeout=30) as api:
        assert api.patch(f"/keys/{org.inference_hash}", json={"limit": LIMIT_USD}).status_code == 200
    direct = database_url({**connection.settings_dict, "HOST": black_hole.target[0], "PORT": black_hole.target[1]})
    answer: dict = {}

    def client() -> None:
        answer["response"] = httpx.post(
            f"{gateway_server.url}/api/v1/responses",
            json={"model": SLOW, "input": "hi", "max_output_tokens": 40},
            headers={"Authorization": f"Bearer {org.inference_key}"},
            timeout=60,
        )

    request = threading.Thread(target=client)
    request.start()
    deadline = time.monotonic() + 10
    while not fake_upstream.requests and time.monotonic() < deadline:  # the hold is taken before the call
        time.sleep(0.05)
    assert fake_upstream.requests, "the request never reached the provider"
    hold = SpendReservation.objects.get()
    assert hold.id in keeper._live  # a live hold of this process

    black_hole.blackhole()  # the database stalls: the keeper's renewal gets no answer
    renewal: dict = {}

    def keeper_turn() -> None:
        try:
            keeper.turn()
        except Exception as exc:  # what the keeper's thread logs and retries
            renewal["error"] = exc
        finally:
            connections.close_all()

    turn = threading.Thread(target=keeper_turn)
    turn.start()
    turn.join(30)
    assert "error" in renewal  # nothing renewed during the stall
    time.sleep(settings.GATEWAY_BUDGET_RESERVATION_TTL + 0.2)
    assert "charged 1 expired" in reap_from_another_process(direct)  # the live hold, reaped
    black_hole.resume()
    reaped = SpendReservation.objects.get(id=hold.id)
    assert reaped.reaped_at is not None
    assert key_counter(org).spent_units == hold.amount_units  # charged at the hold for now
    assert Generation.objects.get().status == "interrupted"

    request.join(60)
    response = answer["response"]
    assert response.status_code == 200, response.text  # the request was alive all along
    wait_idle(timeout=30)
    deadline = time.monotonic() + 30
    while SpendReservation.objects.exists() and time.monotonic() < deadline:  # its settlement lands
        time.sleep(0.1)

    row = Generation.objects.get()  # one row: the request's own replaced the interrupted one
    assert row.status == "completed" and not row.usage_estimated
    cost_units = usd_to_units(row.cost)
    assert 0 < cost_units < hold.amount_units
    counter = key_counter(org)
    assert counter.spent_units == cost_units, (counter.spent_units, cost_units, hold.amount_units)  # once
    assert counter.reserved_units == 0 and not SpendReservation.objects.exists()
    assert counter.spent_units <= usd_to_units(Decimal(LIMIT_USD))
    out = StringIO()
    call_command("budgets_reconcile", stdout=out)
    assert "0 drifted" in out.getvalue(), out.getvalue()


def test_a_hold_renewed_while_the_reaper_runs_is_not_reaped(org):
    """The reaper listed the hold as expired; its process's renewal commits before the reaper marks it: the hold
    is live again and stays unreaped (the renewal holds the row's lock while the reaper waits for it)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): row locks between two connections")
    limit = SpendLimit(
        scope="api-key", scope_id=org.inference_hash, name="key", limit_usd=Decimal(LIMIT_USD), interval="lifetime"
    )
    now = datetime.now(UTC)
    hold = spend_reserve(limits=[limit], amount_units=usd_to_units(Decimal("0.01")), now=now - timedelta(hours=1))
    SpendReservation.objects.filter(id=hold.reservation_id).update(expires_at=now - timedelta(seconds=1))
    outcome: dict = {}

    def reaper() -> None:
        try:
            outcome["reaped"] = reservations_reap(now=now)
        finally:
            connections.close_all()

    with transaction.atomic():  # the keeper's renewal, not committed yet: it holds the row's lock
        assert keeper.renew_reservations([hold.reservation_id], now + timedelta(seconds=60)) == 1
        thread = threading.Thread(target=reaper)
        thread.start()
        deadline = time.monotonic() + 10
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:  # the reaper listed the hold and waits on its row
                cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")  # live, not a snapshot
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.02)
            else:
                pytest.fail("the reaper never waited on the renewed row")
    thread.join(30)
    assert outcome["reaped"] == 0
    row = SpendReservation.objects.get(id=hold.reservation_id)
    assert row.reaped_at is None and row.expires_at > now
    counter = SpendCounter.objects.get(id=hold.counter_ids[0])
    assert counter.spent_units == 0 and counter.reserved_units == hold.amount_units
    keeper.settled([hold.reservation_id])
