"""Holds outside any atomic() block (the data plane) run as BEGIN ... COMMIT on the driver's connection (on
PostgreSQL as one statement): all-or-nothing like the savepoint path, with Django's exceptions."""

from __future__ import annotations

import uuid
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from budgets import counters
from budgets.models import SpendCounter, SpendReservation
from inference.pipeline.context import SpendLimit
from metering.cost import usd_to_units

pytestmark = pytest.mark.django_db(transaction=True)
WORKSPACE = str(uuid.uuid4())
KEY_HASH = "ab" * 32


def limits(workspace_limit: str, key_limit: str) -> list[SpendLimit]:
    return [
        SpendLimit(scope="workspace", scope_id=WORKSPACE, name="workspace", limit_usd=Decimal(workspace_limit),
                   interval="daily", include_byok=False),
        SpendLimit(scope="api-key", scope_id=KEY_HASH, name="key", limit_usd=Decimal(key_limit), interval=None,
                   include_byok=False),
    ]  # fmt: skip


def reserve(workspace_limit: str, key_limit: str, usd: str) -> counters.Hold:
    return counters.spend_reserve(
        limits=limits(workspace_limit, key_limit), amount_units=usd_to_units(Decimal(usd)), now=timezone.now()
    )


def test_a_hold_outside_atomic_commits_on_the_driver_connection():
    assert not connection.in_atomic_block
    hold = reserve("10", "10", "1.5")
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [15_000_000_000] * 2
    assert SpendReservation.objects.get().id == hold.reservation_id
    counters.spend_settle(hold=hold, cost_units=usd_to_units(Decimal("0.5")), is_byok=False)
    assert sorted(SpendCounter.objects.values_list("reserved_units", "spent_units")) == [(0, 5_000_000_000)] * 2
    assert not SpendReservation.objects.exists()


def test_a_refusal_by_the_second_counter_rolls_back_the_first():
    reserve("10", "10", "0")  # creates both counters
    with pytest.raises(counters.LimitExceeded) as refused:
        reserve("10", "1", "2")  # the workspace counter takes it, the key counter refuses
    assert refused.value.limit.name == "key"
    assert list(SpendCounter.objects.values_list("reserved_units", flat=True)) == [0, 0]
    assert SpendReservation.objects.count() == 1  # only the first, free hold


def test_a_database_error_comes_out_as_djangos_and_leaves_nothing(monkeypatch):
    first = reserve("10", "10", "0")
    # The reservation INSERT fails after the counters were updated (its id is taken): on PostgreSQL inside the
    # one-statement hold, elsewhere after the UPDATEs of the same transaction.
    monkeypatch.setattr(counters, "uuid", SimpleNamespace(uuid4=lambda: first.reservation_id, UUID=uuid.UUID))
    with pytest.raises(IntegrityError):
        reserve("10", "10", "1")
    assert list(SpendCounter.objects.values_list("reserved_units", flat=True)) == [0, 0]
    assert SpendReservation.objects.count() == 1
    assert not connection.in_atomic_block
    monkeypatch.undo()
    reserve("10", "10", "1")  # the connection is usable afterwards
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [10_000_000_000] * 2


def test_a_vanished_counter_row_is_looked_up_again():
    reserve("10", "10", "1")
    SpendCounter.objects.filter(scope="api-key").delete()  # an operator removed it; this process cached its id
    hold = reserve("10", "10", "2")
    assert sorted(SpendCounter.objects.values_list("scope", "reserved_units")) == [
        ("api-key", 20_000_000_000),
        ("workspace", 30_000_000_000),
    ]
    assert SpendReservation.objects.filter(id=hold.reservation_id).exists()


def test_three_limits_all_or_nothing_and_the_refusing_one_is_named():
    three = [
        *limits("10", "10"),
        SpendLimit(scope="guardrail", scope_id=f"{uuid.uuid4()}:key:{KEY_HASH}", name="guardrail",
                   limit_usd=Decimal("3"), interval="monthly", include_byok=True),
    ]  # fmt: skip
    now = timezone.now()
    counters.spend_reserve(limits=three, amount_units=usd_to_units(Decimal("2")), now=now)
    with pytest.raises(counters.LimitExceeded) as refused:
        counters.spend_reserve(limits=three, amount_units=usd_to_units(Decimal("2")), now=now)
    assert refused.value.limit.name == "guardrail"
    assert refused.value.reserved_units == 20_000_000_000
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [20_000_000_000] * 3
    assert SpendReservation.objects.count() == 1
    counters.spend_reserve(limits=three, amount_units=usd_to_units(Decimal("1")), now=now)  # exactly fits
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [30_000_000_000] * 3
    with pytest.raises(counters.LimitExceeded):  # a free request needs the limit not to be reached
        counters.spend_reserve(limits=three, amount_units=0, now=now)


def test_the_reservation_row_records_the_request_its_counters_and_its_times():
    now = timezone.now()
    hold = counters.spend_reserve(
        limits=limits("10", "10"), amount_units=usd_to_units(Decimal("1")), now=now, request_id="req-Ünï-42"
    )
    row = SpendReservation.objects.get(id=hold.reservation_id)
    assert row.request_id == "req-Ünï-42" and row.amount_units == 10_000_000_000
    assert sorted(row.counter_ids) == sorted(hold.counter_ids)
    assert row.created_at == now
    assert (row.expires_at - now).total_seconds() == pytest.approx(settings.GATEWAY_BUDGET_RESERVATION_TTL)
