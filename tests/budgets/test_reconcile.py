"""budgets_reconcile: counters against the Generation rows (plus reaped holds, minus requests in flight),
drift reported with exit status 1, repaired with --fix, through requests served by the real gateway."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from budgets import counters
from budgets.models import SpendCounter, SpendReservation
from budgets.selectors import workspace_spend_limits
from inference.models import Generation
from metering.cost import usd_to_units
from tests.budgets.test_e2e import ask, generations, http, priced_echo, put_budget, settled_counter  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def reconcile(*args) -> str:
    out = StringIO()
    call_command("budgets_reconcile", *args, stdout=out)
    return out.getvalue()


def served(http, org, count=3) -> SpendCounter:  # noqa: F811
    put_budget(org, "daily", 1)
    put_budget(org, "weekly", 2)
    for _ in range(count):
        assert ask(http).status_code == 200
    return settled_counter(org)


def test_counters_of_served_requests_agree_with_the_record(http, org):  # noqa: F811
    counter = served(http, org)
    assert counter.spent_usd == sum(g.cost for g in generations()) == Decimal("0.012")
    assert reconcile() == "checked 2 counter(s): 0 drifted\n"


def test_drift_is_reported_then_fixed(http, org):  # noqa: F811
    counter = served(http, org)
    lost = usd_to_units(Decimal("0.004"))  # a settlement lost with a PostgreSQL crash
    SpendCounter.objects.filter(id=counter.id).update(spent_units=counter.spent_units - lost, reserved_units=7)
    with pytest.raises(CommandError) as drifted:
        reconcile()
    assert "1 spend counter(s) drifted" in str(drifted.value)

    out = reconcile("--fix")

    line = f"workspace {org.workspace.id} daily from {counter.period_start:%Y-%m-%d}: spent $0.008, record says"
    assert line in out and "(drift $-0.004)" in out and "held $0.0000000007, record says $0 " in out
    assert out.endswith("checked 2 counter(s): 1 drifted, fixed\n")
    counter.refresh_from_db()
    assert (counter.spent_usd, counter.reserved_units) == (Decimal("0.012"), 0)
    assert reconcile() == "checked 2 counter(s): 0 drifted\n"


def test_reaped_holds_and_requests_in_flight_are_not_drift(http, org):  # noqa: F811
    counter = served(http, org, count=1)
    limits = workspace_spend_limits(org.workspace.id)
    now = timezone.now()
    crashed = counters.spend_reserve(limits=limits, amount_units=500, now=now, request_id=str(uuid.uuid4()))
    in_flight_id = uuid.uuid4()
    counters.spend_reserve(limits=limits, amount_units=300, now=now, request_id=str(in_flight_id))
    # the request in flight already wrote its row (accounting runs before settlement): not in the counter yet
    row = Generation.objects.first()
    row.pk, row.cost = in_flight_id, Decimal("0.0000000200")
    row.save(force_insert=True)
    SpendReservation.objects.filter(id=crashed.reservation_id).update(expires_at=now - timedelta(seconds=1))
    assert counters.reservations_reap(now=now) == 1

    assert reconcile() == "checked 2 counter(s): 0 drifted\n"
    counter.refresh_from_db()
    assert counter.reserved_units == 300 and counter.spent_units == usd_to_units(Decimal("0.004")) + 500


def test_byok_spend_and_scope_filter(http, org):  # noqa: F811
    counter = served(http, org, count=1)
    Generation.objects.update(is_byok=True)  # the record says a BYOK key paid
    with pytest.raises(CommandError):
        reconcile("--scope", "workspace")
    assert reconcile("--scope", "api-key") == "checked 0 counter(s): 0 drifted\n"
    reconcile("--fix")
    counter.refresh_from_db()
    assert (counter.spent_units, counter.byok_spent_usd) == (0, Decimal("0.004"))


def test_past_periods_only_with_all_periods(http, org):  # noqa: F811
    counter = served(http, org, count=1)
    yesterday = counter.period_start - timedelta(days=1)
    SpendCounter.objects.create(
        scope="workspace", scope_id=str(org.workspace.id), interval="daily", period_start=yesterday, spent_units=9
    )
    assert reconcile() == "checked 2 counter(s): 0 drifted\n"
    with pytest.raises(CommandError):
        reconcile("--all-periods")
