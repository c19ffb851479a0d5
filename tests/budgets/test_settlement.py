"""Group-committed settlements: many requests settled in one transaction, each hold released exactly once."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.db import DataError, OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from budgets import counters, services, settler
from budgets.counters import Settlement
from budgets.middleware import BudgetMiddleware
from budgets.models import SpendCounter, SpendReservation
from gateway_project import lifespan
from gateway_project.policy_cache import read_policy_version
from inference.pipeline.context import SpendLimit
from metering.cost import usd_to_units
from tests.budgets.conftest import gated, make_ctx, principal_of

pytestmark = pytest.mark.django_db

units = usd_to_units


def limit(scope_id: str, usd: str = "100", scope: str = "api-key") -> SpendLimit:
    return SpendLimit(scope=scope, scope_id=scope_id, name=scope_id, limit_usd=Decimal(usd), interval="daily")


def hold(limits: list[SpendLimit], usd: str, now=None) -> counters.Hold:
    return counters.spend_reserve(limits=limits, amount_units=units(Decimal(usd)), now=now or timezone.now())


def counter(scope_id: str) -> SpendCounter:
    return SpendCounter.objects.get(scope_id=scope_id)


def test_a_batch_of_many_settlements_is_exact(org):
    shared, byok_only = limit("key-a"), limit("key-b")
    settlements = []
    for i in range(40):
        limits = [shared, byok_only] if i % 4 == 0 else [shared]
        settlements.append(
            Settlement(hold=hold(limits, "0.5"), cost_units=units(Decimal("0.0123")), is_byok=i % 4 == 0)
        )
    assert counter("key-a").reserved_units == units(Decimal("20"))

    counters.spend_settle_many(settlements)

    a, b = counter("key-a"), counter("key-b")
    assert a.reserved_units == 0 and b.reserved_units == 0
    assert a.spent_units == 30 * units(Decimal("0.0123")) and a.byok_spent_units == 10 * units(Decimal("0.0123"))
    assert b.spent_units == 0 and b.byok_spent_units == 10 * units(Decimal("0.0123"))
    assert not SpendReservation.objects.exists()


def test_two_holds_on_overlapping_counters_in_one_batch(org):
    workspace = limit(str(org.workspace.id), scope="workspace")
    first = hold([workspace, limit("key-a")], "0.4")
    second = hold([limit("key-b"), workspace], "0.3")
    assert counter(str(org.workspace.id)).reserved_units == units(Decimal("0.7"))

    counters.spend_settle_many(
        [
            Settlement(hold=first, cost_units=units(Decimal("0.1")), is_byok=False),
            Settlement(hold=second, cost_units=units(Decimal("0.2")), is_byok=True),
        ]
    )

    shared = counter(str(org.workspace.id))
    assert (shared.reserved_units, shared.spent_usd, shared.byok_spent_units) == (
        0,
        Decimal("0.1"),
        units(Decimal("0.2")),
    )
    a, b = counter("key-a"), counter("key-b")
    assert (a.reserved_units, a.spent_usd, a.byok_spent_units) == (0, Decimal("0.1"), 0)
    assert (b.reserved_units, b.spent_units, b.byok_spent_units) == (0, 0, units(Decimal("0.2")))


def test_a_hold_reaped_before_its_batch_is_not_released_twice(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 60
    now = timezone.now().replace(hour=10)
    key = limit("key-a")
    slow = hold([key], "0.5", now=now)  # expires at 10:01
    fresh = hold([key], "0.25", now=now + timedelta(seconds=50))  # expires at 10:01:50
    assert counters.reservations_reap(now=now + timedelta(seconds=61)) == 1  # slow's hold released here

    counters.spend_settle_many(
        [
            Settlement(hold=slow, cost_units=units(Decimal("0.4")), is_byok=False),
            Settlement(hold=fresh, cost_units=units(Decimal("0.1")), is_byok=False),
            Settlement(hold=fresh, cost_units=0, is_byok=False),  # the same hold twice: released once
        ]
    )

    row = counter("key-a")
    assert row.reserved_units == 0 and row.spent_usd == Decimal("0.5")
    assert not SpendReservation.objects.exists()


def budget(org, usd: str = "10") -> None:
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal(usd))


def workspace_counter(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id))


def contexts(org, count: int, user=lambda i: "") -> list:
    principal, version = principal_of(org.inference_hash), read_policy_version()
    body = {"model": "vendor/model", "input": "", "max_output_tokens": 10}
    return [make_ctx(principal, body=dict(body, user=user(i)), policy_version=version) for i in range(count)]


async def concurrent_requests(ctxs: list, cost: str) -> None:
    """Requests through BudgetMiddleware that all finish at the same moment (a BYOK key pays user "byok")."""
    arrived = 0
    all_in = asyncio.Event()

    async def upstream(ctx):
        nonlocal arrived
        arrived += 1
        if arrived == len(ctxs):
            all_in.set()
        await all_in.wait()
        ctx.outcome.cost = Decimal(cost)
        ctx.outcome.credential_is_byok = ctx.body["user"] == "byok"

    middleware = BudgetMiddleware(gated(upstream))
    await asyncio.gather(*(middleware(ctx) for ctx in ctxs))


def test_concurrent_requests_settle_in_one_transaction(org):
    budget(org)
    ctxs = contexts(org, 30, user=lambda i: "byok" if i % 3 == 0 else "")
    with CaptureQueriesContext(connection) as queries:
        async_to_sync(concurrent_requests)(ctxs, "0.02")
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 1 and "RETURNING" in deletes[0]
    row = workspace_counter(org)
    assert row.reserved_units == 0
    assert row.spent_usd == Decimal("0.4") and row.byok_spent_units == units(Decimal("0.2"))  # 20 platform, 10 BYOK
    assert not SpendReservation.objects.exists()


def timed_request(org) -> float:
    async def upstream(ctx):
        ctx.outcome.cost = Decimal("0.01")

    ctx = make_ctx(principal_of(org.inference_hash), policy_version=read_policy_version())
    started = time.monotonic()
    async_to_sync(BudgetMiddleware(gated(upstream)))(ctx)
    return time.monotonic() - started


def test_flush_zero_settles_at_once_and_a_delay_waits(org, settings):
    budget(org)
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 0
    assert timed_request(org) < 0.3
    assert workspace_counter(org).spent_usd == Decimal("0.01") and workspace_counter(org).reserved_units == 0
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 300
    assert timed_request(org) >= 0.3  # the request waited for its batch
    assert workspace_counter(org).spent_usd == Decimal("0.02") and workspace_counter(org).reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_a_second_cancellation_does_not_lose_the_settlement(org, settings):
    budget(org)
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 100
    [ctx] = contexts(org, 1)

    async def scenario():
        async def upstream(ctx):
            ctx.outcome.cost = Decimal("0.03")
            raise asyncio.CancelledError  # the client went away

        task = asyncio.ensure_future(BudgetMiddleware(gated(upstream))(ctx))
        while not settler.settler.in_flight():  # the request now waits for its batch
            await asyncio.sleep(0.005)
        task.cancel()  # cancelled again while settling
        with pytest.raises(asyncio.CancelledError):
            await task
        assert settler.settler.in_flight() == 1  # still queued
        assert await lifespan.drain(5) == 0  # the shutdown drain waits for it
        assert settler.settler.in_flight() == 0

    async_to_sync(scenario)()
    row = workspace_counter(org)
    assert row.spent_usd == Decimal("0.03") and row.reserved_units == 0


def test_a_failing_batch_is_settled_request_by_request(org, monkeypatch, caplog):
    budget(org)
    failed_batches = []

    async def broken_batch(settlements):
        failed_batches.append(len(settlements))
        raise DataError("value out of range")

    real_one = settler._settle_one
    bad_request = {}

    async def one(*, hold, cost_units, is_byok):
        if hold.reservation_id == bad_request.get("id"):
            raise DataError("this one fails too")
        await real_one(hold=hold, cost_units=cost_units, is_byok=is_byok)

    monkeypatch.setattr(settler, "_settle_many", broken_batch)
    monkeypatch.setattr(settler, "_settle_one", one)

    ctxs = contexts(org, 5, user=lambda i: "bad" if i == 0 else "")

    async def requests():
        async def upstream(ctx):
            if ctx.body["user"] == "bad":
                bad_request["id"] = ctx.reservation.reservation_id
            ctx.outcome.cost = Decimal("0.05")

        await asyncio.gather(*(BudgetMiddleware(gated(upstream))(ctx) for ctx in ctxs))

    with caplog.at_level(logging.ERROR, logger="gateway.budgets"):
        async_to_sync(requests)()  # every request returns normally

    assert sum(failed_batches) == 5
    row = workspace_counter(org)
    assert row.spent_usd == Decimal("0.2")  # four settled one by one
    assert row.reserved_units == units(Decimal("0.1"))  # the failed one's hold stays until it expires
    assert list(SpendReservation.objects.values_list("id", flat=True)) == [bad_request["id"]]
    assert f"settling reservation {bad_request['id']} failed" in caplog.text


def test_a_batch_waits_for_the_database_to_come_back(org, monkeypatch, settings):
    budget(org)
    real_many = settler._settle_many
    failures = []

    async def down_twice(settlements):
        if len(failures) < 2:
            failures.append(len(settlements))
            raise OperationalError("the database system is starting up")
        await real_many(settlements)

    monkeypatch.setattr(settler, "_settle_many", down_twice)
    assert timed_request(org) >= 0.3  # retried after 0.1 s and 0.2 s
    assert failures == [1, 1]
    row = workspace_counter(org)
    assert row.spent_usd == Decimal("0.01") and row.reserved_units == 0
    assert not SpendReservation.objects.exists()
