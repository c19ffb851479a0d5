"""Holds of requests whose process died: they block until they expire, then are charged at the hold amount
(the provider may have billed up to it) and marked reaped, never released at $0."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from budgets import counters, services
from budgets.middleware import BudgetMiddleware
from budgets.models import AppliedSettlement, SpendCounter, SpendReservation
from budgets.selectors import workspace_spend_limits
from gateway_project.api.errors import GatewayError
from metering.cost import usd_to_units
from tests.budgets.conftest import Upstream, gated, make_ctx, principal_of, run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settle_without_waiting(settings):
    # time_machine's frozen clock also stops the event loop's: a settlement flush delay would never end.
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 0


def orphan_hold(org, amount_usd="0.85"):
    """A reservation whose process died before settling it."""
    return counters.spend_reserve(
        limits=workspace_spend_limits(org.workspace.id),
        amount_units=usd_to_units(Decimal(amount_usd)),
        now=timezone.now(),
        request_id="crashed",
    )


def request(org):
    upstream = Upstream(cost="0.10")
    run(BudgetMiddleware(gated(upstream)), make_ctx(principal_of(org.inference_hash)))
    return upstream


def test_orphan_hold_blocks_until_it_expires_then_is_charged_automatically(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 600
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        orphan_hold(org, "0.75")
        request(org)  # $0.75 held + $0.10 fits
        request(org)  # $0.10 spent + $0.75 held + $0.10 fits
        with pytest.raises(GatewayError) as refused:  # $0.20 spent + $0.75 held + $0.10 > $1
            request(org)
        assert refused.value.metadata["budget"]["reserved_usd"] == 0.75
    with time_machine.travel(now + timedelta(seconds=601), tick=False):
        with pytest.raises(GatewayError) as refused:  # the refusal reaped the hold: charged, not released
            request(org)
    counter = SpendCounter.objects.get()
    assert counter.reserved_units == 0 and counter.spent_usd == Decimal("0.95")  # $0.20 + the $0.75 hold
    assert refused.value.metadata["budget"]["spent_usd"] == 0.95
    [reaped] = SpendReservation.objects.all()  # kept, marked, as the record of the charge
    assert reaped.request_id == "crashed" and reaped.reaped_at == now + timedelta(seconds=601)


def test_budgets_reap_command_charges_expired_holds(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 60
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        orphan_hold(org, "0.3")
        orphan_hold(org, "0.2")
        out = StringIO()
        call_command("budgets_reap", stdout=out)
        assert out.getvalue().splitlines()[0] == "charged 0 expired reservation(s) at their hold amount"
    with time_machine.travel(now + timedelta(seconds=61), tick=False):
        call_command("budgets_reap", stdout=out)
        call_command("budgets_reap", stdout=out)  # never twice
    assert "charged 2 expired reservation(s) at their hold amount" in out.getvalue()
    assert out.getvalue().splitlines()[-2] == "charged 0 expired reservation(s) at their hold amount"
    counter = SpendCounter.objects.get()
    assert counter.reserved_units == 0 and counter.spent_usd == Decimal("0.5")
    assert SpendReservation.objects.filter(reaped_at__isnull=False).count() == 2


def test_a_request_settling_after_its_hold_was_reaped_is_charged_its_cost_once(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 60
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        slow = orphan_hold(org, "0.5")
        other = orphan_hold(org, "0.25")
    with time_machine.travel(now + timedelta(seconds=30), tick=False):
        counters.spend_settle(hold=other, cost_units=usd_to_units(Decimal("0.1")), is_byok=False)
    with time_machine.travel(now + timedelta(seconds=61), tick=False):
        assert counters.reservations_reap(now=timezone.now()) == 1
        assert SpendCounter.objects.get().spent_usd == Decimal("0.6")  # $0.1 + the reaped $0.5 hold
        counters.spend_settle(hold=slow, cost_units=usd_to_units(Decimal("0.4")), is_byok=False)
    counter = SpendCounter.objects.get()
    assert counter.reserved_units == 0 and counter.spent_usd == Decimal("0.5")  # the hold's charge replaced
    assert not SpendReservation.objects.exists()


def test_a_settlement_applied_again_charges_nothing_twice(org):
    """A retried write of settlements whose first write committed (its answer lost) applies none of them again;
    in the same batch, a settlement not applied yet still is."""
    limits = workspace_spend_limits(org.workspace.id)
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    limits = workspace_spend_limits(org.workspace.id)
    now = timezone.now()
    first = counters.spend_reserve(limits=limits, amount_units=usd_to_units(Decimal("0.4")), now=now)
    second = counters.spend_reserve(limits=limits, amount_units=usd_to_units(Decimal("0.3")), now=now)
    applied = counters.Settlement(hold=first, cost_units=usd_to_units(Decimal("0.25")), is_byok=False)
    counters.spend_settle_many([applied])
    counters.spend_settle_many([applied])  # the retry
    counter = SpendCounter.objects.get()
    assert counter.spent_usd == Decimal("0.25") and counter.reserved_units == second.amount_units
    later = counters.Settlement(hold=second, cost_units=usd_to_units(Decimal("0.1")), is_byok=False)
    counters.spend_settle_many([applied, later])
    counter.refresh_from_db()
    assert counter.spent_usd == Decimal("0.35") and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_budgets_reap_forgets_applied_settlements_after_an_hour(org):
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    limits = workspace_spend_limits(org.workspace.id)
    now = timezone.now()
    with time_machine.travel(now, tick=False):
        hold = counters.spend_reserve(limits=limits, amount_units=10, now=now)
        counters.spend_settle_many([counters.Settlement(hold=hold, cost_units=5, is_byok=False)])
    assert AppliedSettlement.objects.count() == 1
    out = StringIO()
    with time_machine.travel(now + timedelta(minutes=59), tick=False):
        call_command("budgets_reap", stdout=out)
    assert AppliedSettlement.objects.count() == 1
    with time_machine.travel(now + timedelta(hours=1, seconds=1), tick=False):
        call_command("budgets_reap", stdout=out)
    assert AppliedSettlement.objects.count() == 0
    assert out.getvalue().splitlines()[-1] == "forgot 1 applied settlement(s) older than an hour"
