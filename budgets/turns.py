"""Per-turn spend holds, for requests that call upstream (or a paid tool) more than once: the server-tool loop,
fan-out to several models. Two functions:

    turn = await hold_turn(ctx, worst_case_cost(body, candidates))  # before the call; 402 if a limit is full
    ...call upstream...
    charged = await settle_turn(ctx, turn, cost, is_byok=cred.is_byok)  # after it (also after a failure)

- `hold_turn` holds the turn's worst case (an upper bound of what the provider can bill for it) against every
  limit that applies to the request (BudgetMiddleware's `applicable_limits`), or raises the usual 402
  `GatewayError` with nothing sent. The first turn held for a request takes over the request's own hold (the
  one BudgetMiddleware took, `ctx.reservation`) and tops it up when the turn's worst case is larger: from
  then on every cost of the request is settled by its turns and the middleware settles nothing. Turns may be
  held concurrently (a fan-out): only one of them takes the request's hold over.
- `settle_turn` charges `min(cost, hold)` and returns that figure: the caller records it (the Generation's
  cost is the sum of what its turns were charged), so the spend counters and the Generation rows agree and
  recorded spend never exceeds a limit. Settle every turn you held, exactly once, also when it failed: at 0
  when the provider cannot have billed it (refused before it was sent, an HTTP error status), at the turn's
  hold (`turn.amount`) when it may have (a timeout after the send, a cut answer, a client gone while the
  provider worked), at an estimate within the hold for a cut stream. A turn never settled (its process died)
  is charged its hold by `budgets_reap`.

Without any spending limit nothing touches the database; the hold amount still caps what a turn is charged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils import timezone

from budgets import settler
from budgets.counters import Hold, LimitExceeded, Settlement, spend_reserve
from budgets.recovery import hold_record
from gateway_project.db_thread import in_db_thread
from metering.cost import OWNED_BY_TURNS, SETTLED_BY_TURNS, turn_charge_units, units_to_usd, usd_to_units

logger = logging.getLogger("gateway.budgets")
_LIMITS = "budgets.turn_limits"  # ctx.extras: the limits of the request (looked up once)
_reserve = in_db_thread(spend_reserve)


@dataclass(slots=True)
class TurnHold:
    """What `hold_turn` holds for one turn: the most that turn can be charged (`amount_units`)."""

    holds: tuple[Hold, ...]
    amount_units: int
    settled: bool = False

    @property
    def amount(self) -> Decimal:
        """The hold in USD (what a turn the provider may have billed whole is charged)."""
        return units_to_usd(self.amount_units)


async def _limits(ctx: Any) -> list[Any]:
    limits = ctx.extras.get(_LIMITS)
    if limits is None:
        from budgets.middleware import applicable_limits

        limits = ctx.extras[_LIMITS] = await applicable_limits(ctx) if ctx.principal is not None else []
    return limits


async def hold_turn(ctx: Any, amount: Decimal) -> TurnHold:
    """Hold `amount` (USD, the turn's worst case) against the request's limits, or raise 402 (nothing held)."""
    units = usd_to_units(amount) if amount > 0 else 0
    adopted: tuple[Hold, ...] = ()
    if not ctx.extras.get(OWNED_BY_TURNS):
        ctx.extras[OWNED_BY_TURNS] = True  # claimed before any await: concurrent turns never take it twice
        if ctx.reservation is not None:
            adopted = (ctx.reservation,)
    covered = sum(h.amount_units for h in adopted)
    holds = adopted
    if units > covered and await _limits(ctx):
        from budgets.middleware import budget_exceeded_error

        try:
            extra = await _reserve(
                limits=await _limits(ctx),
                amount_units=units - covered,
                now=timezone.now(),
                request_id=ctx.request_id,
                record=hold_record(ctx) if ctx.principal is not None else None,
            )
        except LimitExceeded as exc:
            if adopted:  # nothing sent: the request's hold goes back to BudgetMiddleware
                ctx.extras[OWNED_BY_TURNS] = False
            raise budget_exceeded_error(exc) from None
        holds = (*adopted, extra)
    return TurnHold(holds=holds, amount_units=max(units, covered))


async def settle_turn(ctx: Any, turn: TurnHold, cost: Decimal, *, is_byok: bool) -> Decimal:
    """Charge the turn `min(cost, its hold)` and release the rest; returns the USD charged (record that figure).
    A turn settled already is not charged again (returns 0)."""
    if turn.settled:
        return Decimal(0)
    turn.settled = True
    units = turn_charge_units(ctx, cost, turn.amount_units)
    left = units
    settlements = []
    for hold in turn.holds:
        share = min(left, hold.amount_units)
        left -= share
        settlements.append(Settlement(hold=hold, cost_units=share, is_byok=is_byok))
    if settlements:
        # group-committed with concurrent settlements; shielded: a cancelled request still settles its turn
        await asyncio.shield(asyncio.gather(*(settler.settle(s) for s in settlements)))
    charged = units_to_usd(units)
    ctx.extras[SETTLED_BY_TURNS] = ctx.extras.get(SETTLED_BY_TURNS, Decimal(0)) + charged
    return charged
