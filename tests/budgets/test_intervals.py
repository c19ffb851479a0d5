"""Interval boundaries (UTC day, ISO week from Monday, month; lifetime never resets), with frozen time."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine

from budgets import services
from budgets.middleware import BudgetMiddleware
from budgets.models import SpendCounter
from gateway_project.api.errors import GatewayError
from tests.budgets.conftest import Upstream, gated, make_ctx, principal_of, run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settle_without_waiting(settings):
    # time_machine's frozen clock also stops the event loop's: a settlement flush delay would never end.
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 0


def at(*args):
    return datetime(*args, tzinfo=UTC)


def request(org, upstream=None):
    upstream = upstream or Upstream(cost="0.10")
    run(BudgetMiddleware(gated(upstream)), make_ctx(principal_of(org.inference_hash)))
    return upstream


def refused(org):
    with pytest.raises(GatewayError) as error:
        request(org)
    assert error.value.status == 402
    return error.value


def only(org, interval):
    services.budget_put(workspace=org.workspace, interval=interval, limit_usd=Decimal("0.1"))


@pytest.mark.parametrize(
    "interval, spent_at, still_refused_at, resets_at",
    [
        ("daily", at(2026, 11, 21, 23, 59, 59, 999000), at(2026, 11, 21, 23, 59, 59, 999999), at(2026, 11, 22)),
        ("weekly", at(2026, 11, 22, 23, 59, 59), at(2026, 11, 22, 23, 59, 59, 999999), at(2026, 11, 23)),  # Sun→Mon
        ("weekly", at(2026, 11, 17, 8), at(2026, 11, 22, 12), at(2026, 11, 23)),  # Tuesday's spend lasts all week
        ("monthly", at(2026, 11, 30, 23, 59), at(2026, 11, 30, 23, 59, 59, 999999), at(2026, 12, 1)),
        ("monthly", at(2026, 12, 31, 12), at(2026, 12, 31, 23, 59, 59), at(2027, 1, 1)),  # year boundary
    ],
)
def test_interval_resets_exactly_at_its_boundary(org, interval, spent_at, still_refused_at, resets_at):
    only(org, interval)
    with time_machine.travel(spent_at, tick=False):
        request(org)
    with time_machine.travel(still_refused_at, tick=False):
        error = refused(org)
    expected = resets_at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert error.metadata["budget"]["resets_at"] == expected
    assert f"It resets at {expected}." in error.message
    with time_machine.travel(resets_at, tick=False):
        assert request(org).calls == 1


def test_daily_spend_does_not_carry_but_weekly_does(org):
    services.budget_put(workspace=org.workspace, interval="weekly", limit_usd=Decimal("0.25"))
    services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("0.2"))
    with time_machine.travel(at(2026, 11, 18, 10), tick=False):  # Wednesday
        request(org)
        request(org)
        assert refused(org).metadata["budget"]["interval"] == "daily"
    with time_machine.travel(at(2026, 11, 19, 0), tick=False):  # Thursday: daily reset, weekly has $0.05 left
        error = refused(org)
    assert error.metadata["budget"]["interval"] == "weekly"
    assert error.metadata["budget"]["resets_at"] == "2026-11-23T00:00:00.000Z"


def test_lifetime_never_resets(org):
    only(org, "lifetime")
    with time_machine.travel(at(2026, 1, 1), tick=False):
        request(org)
    with time_machine.travel(at(2031, 6, 1), tick=False):
        error = refused(org)
    assert error.metadata["budget"]["resets_at"] is None and "It never resets." in error.message


def test_request_spanning_midnight_is_charged_to_the_day_it_was_reserved_in(org):
    only(org, "daily")
    with time_machine.travel(at(2026, 11, 21, 23, 59, 59), tick=False) as traveller:

        async def slow_upstream(ctx):
            traveller.move_to(at(2026, 11, 22, 0, 0, 30))
            ctx.outcome.cost = Decimal("0.07")

        request(org, slow_upstream)
        counters = {c.period_start: c for c in SpendCounter.objects.filter(interval="daily")}
        assert list(counters) == [at(2026, 11, 21)]
        assert counters[at(2026, 11, 21)].spent_usd == Decimal("0.07")
        assert counters[at(2026, 11, 21)].reserved_units == 0
        assert request(org).calls == 1  # the new day starts from zero
