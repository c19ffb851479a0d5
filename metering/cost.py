"""What a request is charged: its cost decided from its usage (or the estimate when the provider reported none),
within its hold, in the hold's money unit. The data plane records this figure (inference/accounting.py: the
Generation row) and the spend policy charges it (budgets/middleware.py, budgets/turns.py), without importing
each other.

A hold is counted in integer units of 1e-10 USD (`UNITS_PER_USD`), so conditional checks are exact on every
database: costs round up to a unit, limits round down (`usd_to_units`). Per-turn holds of server-tool loops
(budgets/turns.py) leave marks in `ctx.extras` (`OWNED_BY_TURNS`, `SETTLED_BY_TURNS`, `OVER_HOLD`) that the cost
of the request reads.

The figures, from the request's context (`gateway_project.pipeline.Context`):

- `price`: the price sheet's cost of a usage at the tier the request asked for (metering/prices.py);
- `settled_cost`: that cost within the request's hold (a provider reporting more is charged the hold, and the row
  keeps its figure: `note_over_hold`); `settled_usage`: the provider's usage, or the estimate when it reported none;
- `charge_unanswered` / `estimate_usage`: the outcome of a request whose answer never came (its worst case on the
  endpoint) or whose stream was cut (the input bound and the output streamed so far);
- `final_cost`: the one figure the Generation row records and the counters are charged;
- `settlement_units` / `turn_charge_units`: what the request's hold, or a turn's, is charged (in units).
"""

from __future__ import annotations

import logging
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import orjson

from gateway_project.pipeline import Candidate, Context, Usage
from metering.estimate import OUTPUT_FRAMING_TOKENS, token_bound
from metering.prices import bound_cost, request_tier, usage_cost

logger = logging.getLogger("gateway.accounting")
budget_logger = logging.getLogger("gateway.budgets")

# Counters hold integer amounts of 1e-10 USD, so the conditional checks are exact on every database.
UNITS_PER_USD = 10**10

OWNED_BY_TURNS = "budgets.turns_own_the_hold"  # ctx.extras: the turns settle the request's hold (not the middleware)
SETTLED_BY_TURNS = "budgets.settled_by_turns_usd"  # ctx.extras: USD the turns were charged so far
# ctx.extras: USD the provider reported above what the request was charged (its holds): the row's `reported_cost`.
OVER_HOLD = "budgets.over_hold_usd"
# ctx.extras: accounting gave up writing the request's row (inference/recorder.py): its hold is left to the reaper,
# which charges it and writes the row `interrupted` (the hold is all that is known to be safe to charge).
ROW_NOT_WRITTEN = "budgets.row_not_written"


def usd_to_units(amount: Decimal, *, round_up: bool = True) -> int:
    """USD → integer units of 1e-10 USD (costs round up, limits round down: both err on the safe side)."""
    rounding = ROUND_CEILING if round_up else ROUND_FLOOR
    return int((Decimal(amount) * UNITS_PER_USD).to_integral_value(rounding=rounding))


def units_to_usd(units: int) -> Decimal:
    return Decimal(units) / UNITS_PER_USD


def price(ctx: Context, candidate: Candidate | None, usage: Usage) -> Decimal:
    """The cost of `usage` at the tier the request asked for."""
    return usage_cost(candidate, usage, request_tier(ctx.body))


def within_hold(ctx: Context, cost: Decimal) -> Decimal:
    """An estimated cost never exceeds the request's hold (the worst case reserved for it), when it has one."""
    amount = getattr(ctx.reservation, "amount_units", None)
    if amount is None:
        return cost
    return min(cost, units_to_usd(amount))


def estimated_usage(ctx: Context, candidate: Candidate, output_bytes: int) -> Usage:
    """Usage the upstream did not report: the input bound, and the output counted from what was produced (its
    UTF-8 bytes plus framing, see metering/estimate.py) within the output cap sent upstream."""
    bound = token_bound(ctx.body, candidate)
    output = min(output_bytes + OUTPUT_FRAMING_TOKENS, bound.output_tokens)
    return Usage(input_tokens=bound.input_tokens, output_tokens=output, reported=False, estimated=True)


def settled_usage(ctx: Context, candidate: Candidate, usage: Usage, output: list[dict[str, Any]]) -> Usage:
    """The usage of a finished answer: the upstream's, or when it reported none, the estimate (logged)."""
    if usage.reported:
        return usage
    logger.warning(
        "%s answered request %s without usage; charged from the estimate", candidate.provider_slug, ctx.request_id
    )
    return estimated_usage(ctx, candidate, len(orjson.dumps(output)) if output else 0)


def note_over_hold(ctx: Context, excess: Decimal) -> None:
    """The provider reported usage costing `excess` more than the hold it was charged: the row keeps the
    provider's figure in `reported_cost` (the answer's `usage.cost`, the row's `cost` and the counters say what
    was charged, the hold)."""
    ctx.extras[OVER_HOLD] = ctx.extras.get(OVER_HOLD, Decimal(0)) + excess
    logger.warning("request %s: the provider reported $%s more than its hold; charged the hold", ctx.request_id, excess)


def settled_cost(ctx: Context, candidate: Candidate | None, usage: Usage) -> Decimal:
    """The cost recorded, charged and answered: the price of the usage, within the request's hold (a provider
    reporting more than the hold is charged the hold, and the row says so: `note_over_hold`). Turns held one by
    one (budgets/turns.py) cap their own costs at their holds."""
    cost = price(ctx, candidate, usage)
    if usage.estimated:
        return within_hold(ctx, cost)
    if ctx.extras.get(OWNED_BY_TURNS):
        return cost
    charged = within_hold(ctx, cost)
    if charged < cost:
        note_over_hold(ctx, cost - charged)
    return charged


def charge_unanswered(ctx: Context, candidate: Candidate, is_byok: bool) -> None:
    """The request went to `candidate` but its answer never came (the client went away while the upstream was
    working): the provider may bill it whole, so it is charged its worst case on that endpoint (its hold)."""
    outcome = ctx.outcome
    bound = token_bound(ctx.body, candidate)
    outcome.candidate = candidate
    outcome.credential_is_byok = is_byok
    outcome.usage = Usage(
        input_tokens=bound.input_tokens, output_tokens=bound.output_tokens, reported=False, estimated=True
    )
    cost = bound_cost(candidate, bound.input_tokens, bound.output_tokens, request_tier(ctx.body))
    outcome.cost = within_hold(ctx, cost)


def _output_bytes(ctx: Context, streamed_text: str) -> int:
    items = ctx.outcome.output
    size = len(orjson.dumps(items)) if items else 0
    return max(size, len(streamed_text.encode()))


def estimate_usage(ctx: Context, streamed_text: str) -> None:
    """A stream that failed or was cancelled after the first byte has no upstream usage: charge the input bound
    and the output streamed so far (within the output cap and the hold), marked as estimated."""
    outcome = ctx.outcome
    if outcome.usage.input_tokens or outcome.usage.output_tokens or outcome.candidate is None:
        return
    outcome.usage = estimated_usage(ctx, outcome.candidate, _output_bytes(ctx, streamed_text))
    outcome.cost = settled_cost(ctx, outcome.candidate, outcome.usage)


def final_cost(ctx: Context) -> Decimal:
    """The cost the Generation row records and the spend counters are charged (the same figure for both): never
    more than the request's hold (a provider that bills above the worst case is charged the hold, and logged by
    `settlement_units`); with per-turn holds (budgets/turns.py), the sum of what the turns were charged."""
    outcome = ctx.outcome
    if outcome.cost or outcome.candidate is None:
        cost = outcome.cost if outcome.cost > 0 else Decimal(0)
    else:
        cost = settled_cost(ctx, outcome.candidate, outcome.usage)
    if ctx.extras.get(OWNED_BY_TURNS):
        return cost
    return within_hold(ctx, cost)


def settlement_units(ctx: Context, hold_units: int) -> int:
    """What the request's own hold of `hold_units` is charged: `final_cost` (the Generation row's figure), less
    what per-turn holds charged already, never more than the hold (a cost above it is logged)."""
    cost = final_cost(ctx) - ctx.extras.get(SETTLED_BY_TURNS, 0)
    units = usd_to_units(cost) if cost > 0 else 0
    reported = ctx.outcome.cost
    if units > hold_units or reported > units_to_usd(hold_units):
        budget_logger.warning("request %s cost $%s, more than its hold: charged the hold", ctx.request_id, reported)
        units = min(units, hold_units)
    return units


def turn_charge_units(ctx: Any, cost: Decimal, hold_units: int) -> int:
    """What a turn held at `hold_units` is charged for `cost`: the cost, at most the hold (the excess is logged
    and kept for the row's `reported_cost`)."""
    units = usd_to_units(cost) if cost > 0 else 0
    if units > hold_units:
        hold = units_to_usd(hold_units)
        budget_logger.warning(
            "request %s: a turn cost $%s, more than its hold of $%s; charged the hold", ctx.request_id, cost, hold
        )
        ctx.extras[OVER_HOLD] = ctx.extras.get(OVER_HOLD, Decimal(0)) + cost - hold
        units = hold_units
    return units
