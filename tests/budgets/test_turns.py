"""budgets/turns.py, the per-turn holds that requests calling upstream more than once use (the server-tool
loop, fan-out to several models): the first turn takes the request's hold over (once, also when turns are held
concurrently), a turn is charged at most its hold, and a refused turn leaves the request's hold to
BudgetMiddleware. End to end through the loop: tests/servertools/test_loop_money.py."""

import asyncio
from decimal import Decimal

import pytest

from budgets.middleware import BudgetMiddleware
from budgets.models import SpendReservation
from budgets.turns import hold_turn, settle_turn
from gateway_project.api.errors import GatewayError
from gateway_project.policy_cache import read_policy_version
from tests.budgets.conftest import gated, make_ctx, principal_of, run
from tests.budgets.test_middleware import budget, workspace_counter

pytestmark = pytest.mark.django_db
TURN = Decimal("0.10")  # the request's worst case (10 output tokens at $0.01), and each turn's here


def request(org, handler):
    ctx = make_ctx(principal_of(org.inference_hash), policy_version=read_policy_version())
    run(BudgetMiddleware(gated(handler)), ctx)
    return ctx


def test_concurrent_turns_take_the_request_hold_over_once_and_are_charged_their_cost(org):
    budget(org, "daily", "1")
    seen = {}

    async def fan_out(ctx):
        turns = await asyncio.gather(*(hold_turn(ctx, TURN) for _ in range(3)))
        seen["adopted"] = [ctx.reservation in turn.holds for turn in turns]
        charged = [await settle_turn(ctx, turn, Decimal("0.04"), is_byok=False) for turn in turns]
        ctx.outcome.status, ctx.outcome.cost = "completed", sum(charged)

    ctx = request(org, fan_out)
    assert sorted(seen["adopted"]) == [False, False, True]  # three turns, three holds of $0.10, not four
    counter = workspace_counter(org)
    assert counter.spent_usd == Decimal("0.12") == ctx.outcome.cost and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_a_turn_is_charged_at_most_its_hold(org):
    budget(org, "daily", "1")

    async def overbilled(ctx):
        turn = await hold_turn(ctx, TURN)
        ctx.outcome.status = "completed"
        ctx.outcome.cost = await settle_turn(ctx, turn, Decimal("5"), is_byok=False)  # billed $5, held $0.10
        assert await settle_turn(ctx, turn, Decimal("5"), is_byok=False) == 0  # settled once

    ctx = request(org, overbilled)
    assert ctx.outcome.cost == TURN and workspace_counter(org).spent_usd == TURN


def test_a_turn_no_limit_can_take_is_refused_and_the_request_hold_released(org):
    budget(org, "daily", "0.15")  # the request's $0.10 fits, a first turn of $0.20 does not

    async def too_big(ctx):
        await hold_turn(ctx, Decimal("0.20"))

    with pytest.raises(GatewayError) as refused:
        request(org, too_big)
    assert refused.value.status == 402 and refused.value.metadata["request_max_cost_usd"] == 0.1  # the top-up
    counter = workspace_counter(org)
    assert counter.spent_units == 0 and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_without_a_limit_nothing_is_held_but_the_cap_applies(org):
    async def unlimited(ctx):
        turn = await hold_turn(ctx, TURN)
        assert turn.holds == ()
        ctx.outcome.status = "completed"
        ctx.outcome.cost = await settle_turn(ctx, turn, Decimal("5"), is_byok=False)

    assert request(org, unlimited).outcome.cost == TURN
