"""Budget holds of the server-tool loop: every turn is held against the spending limits before it goes
upstream, and settled with its actual cost after.

BudgetMiddleware holds the worst case of the request as it arrived and settles it when the request ends. The
loop adds:

- before the first turn, when a plugin made the prompt bigger or costs a fee: a supplementary hold of the
  difference, kept (and released) until the request ends, so the first turn is covered in full;
- before every further turn: a hold of that turn's worst case (the prompt has grown by the previous turns
  and tool outputs) plus the fees of the tools that ran since; settled right after the turn with its actual
  cost plus those fees.

What the loop settled itself is recorded in `ctx.extras[SETTLED_KEY]` (USD) so the middleware settles only
the rest of `outcome.cost` (the first turn and plugin fees). A hold that a limit cannot take ends the loop
with the usual 402.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from django.utils import timezone

from budgets import settler
from budgets.counters import Hold, LimitExceeded, Settlement, spend_reserve, usd_to_units
from budgets.estimate import worst_case_cost
from budgets.middleware import applicable_limits, budget_exceeded_error
from gateway_project.db_thread import in_db_thread
from inference.handler import SHAPE_KEY
from inference.pipeline.context import Candidate, Context
from inference.providers.base import ProviderError

SETTLED_KEY = "budgets.settled_by_turns_usd"
_reserve = in_db_thread(spend_reserve)


class TurnBudget:
    """Holds and settles the loop's turns for one request (a no-op when no spending limit applies)."""

    def __init__(self, ctx: Context, candidates: list[Candidate], original_body: dict[str, Any]) -> None:
        self.ctx = ctx
        self.candidates = candidates
        self.original_body = original_body
        self.limits: list[Any] | None = None
        self.current: Hold | None = None
        self.kept: list[Hold] = []  # supplementary holds released when the request ends

    async def _limits(self) -> list[Any]:
        if self.limits is None:
            self.limits = await applicable_limits(self.ctx) if self.ctx.principal is not None else []
        return self.limits

    async def _hold(self, amount: Decimal) -> Hold | None:
        limits = await self._limits()
        if not limits or amount <= 0:
            return None
        try:
            return await _reserve(
                limits=limits,
                amount_units=usd_to_units(amount),
                now=timezone.now(),
                request_id=self.ctx.request_id,
            )
        except LimitExceeded as exc:
            raise budget_exceeded_error(exc) from None

    async def hold_kept(self, amount: Decimal) -> None:
        """A hold kept until the request ends (plugin fees, the first turn's growth): released then."""
        hold = await self._hold(amount)
        if hold is not None:
            self.kept.append(hold)

    def worst_case(self, body: dict[str, Any]) -> Decimal:
        """The turn's worst case over the candidates, each with the body plugins shape for it (a parsed file)."""
        shape = self.ctx.extras.get(SHAPE_KEY)
        if shape is None:
            return worst_case_cost(body, self.candidates)
        worst = Decimal(0)
        for candidate in self.candidates:
            try:
                worst = max(worst, worst_case_cost(shape(body, candidate), [candidate]))
            except ProviderError:  # a candidate the plugins skip is never called
                continue
        return worst

    async def before_first(self, body: dict[str, Any]) -> None:
        """The part of the first turn the middleware's hold does not cover (a plugin grew the prompt)."""
        growth = self.worst_case(body) - worst_case_cost(self.original_body, self.candidates)
        await self.hold_kept(growth)

    async def before_turn(self, body: dict[str, Any], fees: Decimal) -> None:
        """Hold a later turn's worst case (and `fees`), settled by `after_turn`."""
        self.current = await self._hold(self.worst_case(body) + fees)

    async def before_fees(self, amount: Decimal) -> None:
        """Hold the most the server-tool calls of a step can charge, settled by `after_turn`."""
        self.current = await self._hold(amount)

    async def after_turn(self, cost: Decimal, is_byok: bool) -> None:
        """Settle the turn's hold with its actual cost (no hold: the cost is left to the middleware's settlement)."""
        hold, self.current = self.current, None
        if hold is None:
            return
        await _settle(hold, cost, is_byok)
        self.ctx.extras[SETTLED_KEY] = self.ctx.extras.get(SETTLED_KEY, Decimal(0)) + cost

    async def close(self) -> None:
        """Release what is still held (a turn cut short: its cost stays with the middleware's settlement)."""
        holds = [h for h in (self.current, *self.kept) if h is not None]
        self.current, self.kept = None, []
        for hold in holds:
            await _settle(hold, Decimal(0), False)


async def _settle(hold: Hold, cost: Decimal, is_byok: bool) -> None:
    settlement = Settlement(hold=hold, cost_units=usd_to_units(max(cost, Decimal(0))), is_byok=is_byok)
    await asyncio.shield(settler.settle(settlement))
