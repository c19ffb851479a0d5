"""Reconciliation of the spend counters with the Generation rows: the counters are the fast, atomic copy used
to enforce limits; the Generation rows (one per request, with its cost) are the record. A counter drifts when
a settlement was lost (a PostgreSQL crash after an unflushed commit), a batch was retried after its commit
(counted twice), a Generation row could not be written, a limit's counter missed requests made while the limit
did not exist, or an operator edited a row.

For one counter (scope, scope id, interval, period), inside one transaction that locks its row (settlements of
that counter wait, so what is read is consistent):

- expected held = the amounts of its live reservations (not reaped);
- expected spent = the cost of the scope's Generation rows created in the period, platform-paid, plus the
  amounts of its reaped reservations (holds of requests that never settled, charged at the hold amount);
  expected BYOK spent = the cost of the BYOK-paid rows;
- rows of requests that still hold a live or reaped reservation are left out: a request writes its
  Generation row before its settlement, so such a row is not in the counter yet (or is there as its hold).

With `fix`, the counter is moved by the differences (added, in the same transaction), never overwritten.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import transaction
from django.db.models import Q, Sum

from budgets.counters import generations_of
from budgets.models import SpendCounter, SpendReservation
from gateway_project.periods import period_end, period_start
from metering.cost import usd_to_units


@dataclass(frozen=True, slots=True)
class Drift:
    """One counter against what the Generation rows and reservations say it should hold (units of 1e-10 USD)."""

    counter: SpendCounter
    spent: int
    expected_spent: int
    byok_spent: int
    expected_byok_spent: int
    reserved: int
    expected_reserved: int
    fixed: bool = False

    @property
    def drifted(self) -> bool:
        return (self.spent, self.byok_spent, self.reserved) != (
            self.expected_spent,
            self.expected_byok_spent,
            self.expected_reserved,
        )


def _request_uuid(request_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(request_id)
    except ValueError:
        return None


def _expected(counter: SpendCounter) -> tuple[int, int, int]:
    """(spent, BYOK spent, reserved) the counter should hold, read now."""
    live = reaped = 0
    pending: set[uuid.UUID] = set()
    for request_id, amount, counter_ids, reaped_at in SpendReservation.objects.values_list(
        "request_id", "amount_units", "counter_ids", "reaped_at"
    ).iterator():
        if counter.id not in counter_ids:
            continue
        if reaped_at is None:
            live += amount
        else:
            reaped += amount
        if (request := _request_uuid(request_id)) is not None:
            pending.add(request)
    rows = generations_of(counter.scope, counter.scope_id)
    if rows is None:
        return counter.spent_units, counter.byok_spent_units, live
    rows = rows.filter(created_at__gte=counter.period_start)
    end = period_end(counter.interval, counter.period_start)
    if end is not None:
        rows = rows.filter(created_at__lt=end)
    totals = rows.exclude(id__in=pending).aggregate(
        platform=Sum("cost", filter=Q(is_byok=False)), byok=Sum("cost", filter=Q(is_byok=True))
    )
    return usd_to_units(totals["platform"] or 0) + reaped, usd_to_units(totals["byok"] or 0), live


def reconcile_counter(counter_id: int, *, fix: bool) -> Drift:
    """Compare one counter with the record (its row locked meanwhile); with `fix`, move it by the drift."""
    with transaction.atomic():
        counter = SpendCounter.objects.select_for_update().get(id=counter_id)
        spent, byok, reserved = _expected(counter)
        drift = Drift(
            counter=counter,
            spent=counter.spent_units,
            expected_spent=spent,
            byok_spent=counter.byok_spent_units,
            expected_byok_spent=byok,
            reserved=counter.reserved_units,
            expected_reserved=reserved,
        )
        if fix and drift.drifted:
            SpendCounter.objects.filter(id=counter_id).update(
                spent_units=spent, byok_spent_units=byok, reserved_units=reserved
            )
            drift = replace(drift, fixed=True)
    return drift


def counters_to_check(*, now: datetime, all_periods: bool, scope: str | None = None) -> Iterator[int]:
    """Ids of the counters of the current periods (or of every period), optionally of one scope."""
    rows = SpendCounter.objects.all()
    if scope:
        rows = rows.filter(scope=scope)
    if not all_periods:
        current = Q()
        for interval in ("daily", "weekly", "monthly", "lifetime"):
            current |= Q(interval=interval, period_start=period_start(interval, now))
        rows = rows.filter(current)
    yield from rows.order_by("id").values_list("id", flat=True).iterator()


def reconcile(
    *, now: datetime, fix: bool, all_periods: bool = False, scope: str | None = None
) -> tuple[int, list[Drift]]:
    """Reconcile every counter to check; returns how many were checked and the drifted ones (fixed with `fix`)."""
    checked, drifts = 0, []
    for counter_id in list(counters_to_check(now=now, all_periods=all_periods, scope=scope)):
        checked += 1
        drift = reconcile_counter(counter_id, fix=fix)
        if drift.drifted:
            drifts.append(drift)
    return checked, drifts
