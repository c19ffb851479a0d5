"""Holds of requests whose process died: they block until they expire, then are released."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from budgets import counters, services
from budgets.middleware import BudgetMiddleware
from budgets.models import SpendCounter, SpendReservation
from budgets.selectors import workspace_spend_limits
from gateway_project.api.errors import GatewayError
from tests.budgets.conftest import Upstream, make_ctx, principal_of, run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settle_without_waiting(settings):
    # time_machine's frozen clock also stops the event loop's: a settlement flush delay would never end.
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 0


def orphan_hold(org, amount_usd="0.85"):
    """A reservation whose process died before settling it."""
    return counters.spend_reserve(
        limits=workspace_spend_limits(org.workspace.id),
        amount_units=counters.usd_to_units(Decimal(amount_usd)),
        now=timezone.now(),
        request_id="crashed",
    )


def request(org):
    upstream = Upstream(cost="0.10")
    run(BudgetMiddleware(upstream), make_ctx(principal_of(org.inference_hash)))
    return upstream


def test_orphan_hold_blocks_until_it_expires_then_is_released_automatically(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 600
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        orphan_hold(org)
        request(org)  # $0.85 held + $0.10 fits
        with pytest.raises(GatewayError) as refused:
            request(org)
        assert refused.value.metadata["budget"]["reserved_usd"] == 0.85
    with time_machine.travel(now + timedelta(seconds=601), tick=False):
        assert request(org).calls == 1  # the refusal reaped the expired hold and retried
    counter = SpendCounter.objects.get()
    assert counter.reserved_units == 0 and counter.spent_usd == Decimal("0.2")
    assert not SpendReservation.objects.exists()


def test_budgets_reap_command_releases_expired_holds(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 60
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        orphan_hold(org, "0.3")
        orphan_hold(org, "0.2")
        out = StringIO()
        call_command("budgets_reap", stdout=out)
        assert out.getvalue().strip() == "released 0 expired reservation(s)"
    with time_machine.travel(now + timedelta(seconds=61), tick=False):
        call_command("budgets_reap", stdout=out)
    assert "released 2 expired reservation(s)" in out.getvalue()
    assert SpendCounter.objects.get().reserved_units == 0


def test_settling_a_reaped_hold_adds_the_cost_without_releasing_twice(org, settings):
    settings.GATEWAY_BUDGET_RESERVATION_TTL = 60
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("1"))
    now = timezone.now().replace(hour=10)
    with time_machine.travel(now, tick=False):
        slow = orphan_hold(org, "0.5")
        other = orphan_hold(org, "0.25")
    with time_machine.travel(now + timedelta(seconds=30), tick=False):
        counters.spend_settle(hold=other, cost_units=counters.usd_to_units(Decimal("0.1")), is_byok=False)
    with time_machine.travel(now + timedelta(seconds=61), tick=False):
        assert counters.reservations_reap(now=timezone.now()) == 1
        counters.spend_settle(hold=slow, cost_units=counters.usd_to_units(Decimal("0.4")), is_byok=False)
    counter = SpendCounter.objects.get()
    assert counter.reserved_units == 0 and counter.spent_usd == Decimal("0.5")
