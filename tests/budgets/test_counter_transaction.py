"""Holds outside any atomic() block (the data plane) run as BEGIN ... COMMIT on the driver's connection (on
PostgreSQL in one pipeline): all-or-nothing like the savepoint path, with Django's exceptions."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone

from budgets import counter_sql, counters
from budgets.models import SpendCounter, SpendReservation
from inference.pipeline.context import SpendLimit

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
        limits=limits(workspace_limit, key_limit), amount_units=counters.usd_to_units(Decimal(usd)), now=timezone.now()
    )


def test_a_hold_outside_atomic_commits_on_the_driver_connection():
    assert not connection.in_atomic_block
    hold = reserve("10", "10", "1.5")
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [15_000_000_000] * 2
    assert SpendReservation.objects.get().id == hold.reservation_id
    counters.spend_settle(hold=hold, cost_units=counters.usd_to_units(Decimal("0.5")), is_byok=False)
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
    reserve("10", "10", "0")
    real = counter_sql.reservation_statement

    def broken_insert(**kwargs):
        reservation_id, _statement, _params = real(**kwargs)
        return reservation_id, "INSERT INTO no_such_table VALUES (1)", []

    monkeypatch.setattr(counter_sql, "reservation_statement", broken_insert)
    with pytest.raises(DatabaseError):
        reserve("10", "10", "1")
    assert list(SpendCounter.objects.values_list("reserved_units", flat=True)) == [0, 0]
    assert not connection.in_atomic_block
    monkeypatch.undo()
    reserve("10", "10", "1")  # the connection is usable afterwards
    assert sorted(SpendCounter.objects.values_list("reserved_units", flat=True)) == [10_000_000_000] * 2
