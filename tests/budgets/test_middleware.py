"""BudgetMiddleware: reservation before the upstream call, 402 naming the budget, settlement after."""

import asyncio
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from budgets import services
from budgets.middleware import BudgetMiddleware
from budgets.models import SpendCounter, SpendReservation
from gateway_project.api.errors import GatewayError
from gateway_project.policy_cache import read_policy_version
from inference.pipeline.context import SpendLimit
from tests.budgets.conftest import Upstream, candidate, gated, make_ctx, principal_of, run

pytestmark = pytest.mark.django_db


def budget(org, interval, limit, include_byok=None):
    services.budget_put(
        workspace=org.workspace, interval=interval, limit_usd=Decimal(limit), include_byok_in_budgets=include_byok
    )


def workspace_counter(org, interval="daily") -> SpendCounter:
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval=interval)


def request(org, upstream, version=None, **ctx_kwargs):
    ctx = make_ctx(principal_of(org.inference_hash), policy_version=version or read_policy_version(), **ctx_kwargs)
    run(BudgetMiddleware(gated(upstream)), ctx)
    return ctx


def test_without_limits_nothing_is_reserved(org):
    upstream = Upstream()
    request(org, upstream)
    assert upstream.calls == 1
    assert not SpendCounter.objects.exists() and not SpendReservation.objects.exists()


def test_budget_covering_ten_worst_cases_lets_ten_through_then_402(org):
    budget(org, "daily", "1")  # worst case: 10 output tokens at $0.01 = $0.10
    upstream = Upstream(cost="0.10")
    for _ in range(10):
        request(org, upstream)
    with pytest.raises(GatewayError) as refused:
        request(org, upstream)
    assert upstream.calls == 10  # nothing sent upstream for the refused request
    error = refused.value
    assert error.status == 402
    assert error.message.startswith("Workspace 'default' daily budget of $1 exceeded")
    tomorrow = (timezone.now() + timezone.timedelta(days=1)).strftime("%Y-%m-%dT00:00:00.000Z")
    assert f"It resets at {tomorrow}." in error.message
    assert error.metadata["budget"]["resets_at"] == tomorrow
    assert error.metadata["budget"]["spent_usd"] == 1.0 and error.metadata["request_max_cost_usd"] == 0.1
    counter = workspace_counter(org)
    assert counter.spent_usd == Decimal(1) and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_a_cost_above_the_hold_is_charged_the_hold(org, caplog):
    # A provider that bills more than the worst case (it should not): the counter never passes what was held.
    budget(org, "daily", "1")
    ctx = request(org, Upstream(cost="0.50"))
    counter = workspace_counter(org)
    assert counter.spent_usd == Decimal("0.10") and counter.reserved_units == 0
    assert "more than its hold" in caplog.text
    from metering.cost import final_cost

    assert final_cost(ctx) == Decimal("0.10")  # the Generation row records the same figure


def test_reservation_larger_than_the_actual_cost_is_released(org):
    budget(org, "daily", "1")
    ctx = make_ctx(principal_of(org.inference_hash), policy_version=read_policy_version())
    seen = {}

    async def upstream(ctx):
        seen["reserved"] = ctx.reservation.amount_units
        ctx.outcome.status = "completed"
        ctx.outcome.cost = Decimal("0.0234")

    run(BudgetMiddleware(gated(upstream)), ctx)
    assert seen["reserved"] == 10**9  # $0.10 held while the call ran
    counter = workspace_counter(org)
    assert counter.spent_usd == Decimal("0.0234") and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_hold_is_visible_while_the_request_runs(org):
    budget(org, "daily", "1")
    observed = []

    async def upstream(ctx):
        from asgiref.sync import sync_to_async

        row = await sync_to_async(workspace_counter)(org)
        observed.append((row.reserved_units, row.spent_units))
        ctx.outcome.cost = Decimal("0.01")

    request(org, upstream)
    assert observed == [(10**9, 0)]


def test_failed_upstream_costs_nothing(org):
    budget(org, "daily", "1")
    upstream = Upstream(fail=GatewayError(502, "Provider returned error"))
    with pytest.raises(GatewayError) as failure:
        request(org, upstream)
    assert failure.value.status == 502
    counter = workspace_counter(org)
    assert counter.spent_units == 0 and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_client_disconnect_still_settles_the_actual_cost(org):
    budget(org, "daily", "1")

    async def upstream(ctx):
        ctx.outcome.cost = Decimal("0.03")  # tokens streamed before the client went away
        ctx.outcome.status = "cancelled"
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        request(org, upstream)
    counter = workspace_counter(org)
    assert counter.spent_usd == Decimal("0.03") and counter.reserved_units == 0


def test_worst_case_uses_the_most_expensive_candidate_and_the_endpoint_cap(org):
    budget(org, "daily", "1")
    # no max_output_tokens; input bound: 65 bytes of JSON + 64 tokens of request framing = 129 tokens
    body = {"model": "vendor/model", "input": "x" * 30}
    cheap = candidate("0.0001", "0.001", max_output_tokens=100)
    dear = candidate("0.001", "0.002", max_output_tokens=400)  # 129 * 0.001 + 400 * 0.002 = $0.929
    seen = {}

    async def upstream(ctx):
        seen["amount"] = ctx.reservation.amount_units
        ctx.outcome.cost = Decimal("0.2")

    request(org, upstream, body=body, candidates=[cheap, dear])
    assert seen["amount"] == 929 * 10**7
    with pytest.raises(GatewayError) as refused:  # $0.20 spent + $0.929 worst case > $1
        request(org, Upstream(), body=body, candidates=[dear])
    assert refused.value.status == 402
    upstream = Upstream()
    request(org, upstream, body=body, candidates=[cheap])  # $0.20 + 129 * 0.0001 + 100 * 0.001 fits
    assert upstream.calls == 1


def test_free_request_is_refused_once_the_limit_is_reached(org):
    budget(org, "daily", "0.1")
    request(org, Upstream(cost="0.10"))
    free = candidate(is_free=True)
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream(cost="0"), candidates=[free])
    assert refused.value.status == 402


def test_byok_spend_counts_only_when_the_workspace_includes_it(org, django_capture_on_commit_callbacks):
    budget(org, "daily", "0.15")
    byok = Upstream(cost="0.10", is_byok=True)
    for _ in range(3):
        request(org, byok)  # BYOK spend does not count: the platform spend stays 0
    counter = workspace_counter(org)
    assert counter.spent_units == 0 and counter.byok_spent_usd == Decimal("0.30")
    with django_capture_on_commit_callbacks(execute=True):
        budget(org, "daily", "0.15", include_byok=True)  # the very next request counts BYOK spend
    with pytest.raises(GatewayError) as refused:
        request(org, byok)
    assert refused.value.status == 402 and refused.value.metadata["budget"]["spent_usd"] == 0.3


def test_key_limit_is_enforced_and_named(org):
    ApiKey.objects.filter(hash=org.inference_hash).update(limit=Decimal("0.15"), limit_reset="weekly")
    request(org, Upstream(cost="0.10"))
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream())
    assert refused.value.status == 402
    assert refused.value.message.startswith("API key 'inference' limit of $0.15 exceeded")
    assert refused.value.metadata["budget"]["interval"] == "weekly"


def test_key_limit_without_reset_is_lifetime_and_byok_per_key_flag(org):
    ApiKey.objects.filter(hash=org.inference_hash).update(limit=Decimal("0.1"), include_byok_in_limit=True)
    request(org, Upstream(cost="0.10", is_byok=True))
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream())
    assert "It never resets." in refused.value.message
    assert refused.value.metadata["budget"]["resets_at"] is None


def test_guardrail_limits_are_enforced(org):
    limit = SpendLimit(
        scope="guardrail", scope_id="g1:key", name="Guardrail 'cap' limit", limit_usd=Decimal("0.1"), interval="monthly"
    )
    request(org, Upstream(cost="0.10"), spend_limits=[limit])
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream(), spend_limits=[limit])
    assert refused.value.message.startswith("Guardrail 'cap' limit of $0.1 exceeded")


def test_guardrail_limit_without_interval_never_resets(org):
    limit = SpendLimit(
        scope="guardrail", scope_id="g2:key", name="Guardrail 'once'", limit_usd=Decimal("0.1"), interval=""
    )
    request(org, Upstream(cost="0.10"), spend_limits=[limit])
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream(), spend_limits=[limit])
    assert refused.value.metadata["budget"]["resets_at"] is None
    assert SpendCounter.objects.get(scope="guardrail").interval == "lifetime"


def test_a_refusal_by_one_limit_holds_nothing_on_the_others(org):
    budget(org, "daily", "5")
    ApiKey.objects.filter(hash=org.inference_hash).update(limit=Decimal("0.05"))
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream())
    assert "API key 'inference' limit" in refused.value.message
    assert workspace_counter(org).reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_a_limit_change_applies_to_the_next_request(org, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        budget(org, "daily", "1")
    for _ in range(5):  # $0.50 spent
        request(org, Upstream(cost="0.10"))
    with django_capture_on_commit_callbacks(execute=True):
        budget(org, "daily", "0.55")
    with pytest.raises(GatewayError):
        request(org, Upstream())
    with django_capture_on_commit_callbacks(execute=True):
        services.budget_delete(workspace=org.workspace, interval="daily")
    upstream = Upstream()
    request(org, upstream)
    assert upstream.calls == 1


def recorded_spend(org, cost, *, is_byok=False, days_ago=0):
    from inference.models import Generation

    Generation.objects.create(
        organization=org.organization,
        workspace=org.workspace,
        key_hash=org.inference_hash,
        user=org.admin,
        status="completed",
        cost=Decimal(cost),
        is_byok=is_byok,
        created_at=timezone.now() - timezone.timedelta(days=days_ago),
    )


def test_spend_before_the_budget_existed_counts(org):
    recorded_spend(org, "0.95")
    recorded_spend(org, "5", days_ago=40)  # outside this day
    recorded_spend(org, "3", is_byok=True)  # BYOK, not included
    budget(org, "daily", "1")
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream())
    assert refused.value.metadata["budget"]["spent_usd"] == 0.95


@pytest.mark.parametrize("subject", ["key", "user"])
def test_guardrail_limit_counts_the_subjects_earlier_spend(org, subject):
    recorded_spend(org, "0.95")
    subject_id = org.inference_hash if subject == "key" else org.admin.id
    limit = SpendLimit(
        scope="guardrail",
        scope_id=f"g9:{subject}:{subject_id}",
        name="guardrail 'g'",
        limit_usd=Decimal("1"),
        interval="daily",
    )
    with pytest.raises(GatewayError) as refused:
        request(org, Upstream(), spend_limits=[limit])
    assert refused.value.message.startswith("guardrail 'g' of $1 exceeded: $0.950000 spent")


def test_client_gone_while_the_hold_is_taken_releases_it(org, monkeypatch):
    from asgiref.sync import async_to_sync

    from budgets import middleware

    budget(org, "daily", "1")
    real_reserve = middleware._reserve
    taken = {}

    async def slow_reserve(**kwargs):
        hold = await real_reserve(**kwargs)
        taken["event"].set()
        await asyncio.sleep(0.2)  # the hold is taken, but the client disconnects before the middleware sees it
        return hold

    monkeypatch.setattr(middleware, "_reserve", slow_reserve)
    upstream = Upstream()
    ctx = make_ctx(principal_of(org.inference_hash), policy_version=read_policy_version())

    async def scenario():
        taken["event"] = asyncio.Event()
        task = asyncio.ensure_future(BudgetMiddleware(gated(upstream))(ctx))
        await asyncio.wait_for(taken["event"].wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async_to_sync(scenario)()
    assert upstream.calls == 0
    counter = workspace_counter(org)
    assert counter.reserved_units == 0 and counter.spent_units == 0
    assert not SpendReservation.objects.exists()
