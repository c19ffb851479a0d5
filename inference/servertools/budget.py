"""Spend of the server-tool loop, on the per-turn holds of budgets/turns.py: every model turn, every step of
server-tool calls and the plugins' work is held before it runs (its worst case: an upper bound of what it can
be billed) and settled after it, at most at its hold. The first hold takes over the request's own hold, so
the request's first turn is not held twice; the loop's outcome cost is the sum of what its turns were
charged, which is what the spend counters got.

A turn that fails is settled by what the provider may have billed for it (`settle_failure`): a streamed turn
cut after it began at its estimate (the input bound and the output streamed so far, within its output cap);
a turn that was sent but never answered (a timeout after the send, an answer cut mid-body, the client gone
while the provider worked) at its worst case on the endpoint it went to, within its hold; a turn refused
before it was sent, or with an error status, at 0. A step of tool calls or a plugin that did not finish is
charged its fee hold (the fees it may have incurred; not the request's hold that the first hold took over).

The holds are taken by the spend policy above inference: `BudgetsConfig.ready()` registers budgets.turns
(`register_turn_holds`). Without it (no budgets app), a turn holds nothing and is charged its cost within the
amount it asked to hold, as budgets.turns does for a request no limit applies to.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from inference.handler import SHAPE_KEY
from inference.pipeline.context import Candidate, Context
from inference.providers.base import ProviderError
from metering.cost import price
from metering.estimate import worst_case_cost


class TurnHolds(Protocol):
    """Holds a turn's worst case against the request's spend limits, and settles it (budgets.turns is one)."""

    async def hold_turn(self, ctx: Any, amount: Decimal) -> Any: ...  # a turn with `.amount` (USD held)

    async def settle_turn(self, ctx: Any, turn: Any, cost: Decimal, *, is_byok: bool) -> Decimal: ...


@dataclass(slots=True)
class _Turn:
    amount: Decimal


class _NoLimits:
    """The default without a spend policy: nothing is held; a turn is charged its cost, at most what it asked for."""

    async def hold_turn(self, ctx: Any, amount: Decimal) -> _Turn:
        return _Turn(amount)

    async def settle_turn(self, ctx: Any, turn: _Turn, cost: Decimal, *, is_byok: bool) -> Decimal:
        return min(cost, turn.amount) if cost > 0 else Decimal(0)


turn_holds: TurnHolds = _NoLimits()


def register_turn_holds(holds: TurnHolds) -> None:
    """Called once from the spend policy's AppConfig.ready() (budgets registers budgets.turns)."""
    global turn_holds
    turn_holds = holds


class LoopBudget:
    """The hold of what the loop is doing right now (a model turn or fees), and its settlement."""

    def __init__(self, ctx: Context, candidates: list[Candidate]) -> None:
        self.ctx = ctx
        self.candidates = candidates
        self.current: Any = None  # the turn held now (TurnHolds.hold_turn)
        self.is_model_turn = False
        self.fees = Decimal(0)  # the most the fees held now can charge (the hold may be larger: see hold_fees)

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

    async def hold_model_turn(self, body: dict[str, Any]) -> None:
        """Hold the worst case of a model turn with this body on any candidate (402 when a limit is full)."""
        self.current = await turn_holds.hold_turn(self.ctx, self.worst_case(body))
        self.is_model_turn = True

    async def adopt_model_turn(self, held: LoopBudget, body: dict[str, Any]) -> None:
        """Take over the model turn `held` held in advance (on a prompt grown by what plugins could add) when it
        covers this body's worst case; else release it and hold this body (402 when a limit is full)."""
        turn, held.current = held.current, None
        if turn is not None and turn.amount >= self.worst_case(body):
            self.current, self.is_model_turn = turn, True
            return
        if turn is not None:
            await turn_holds.settle_turn(self.ctx, turn, Decimal(0), is_byok=False)
        await self.hold_model_turn(body)

    async def hold_fees(self, amount: Decimal) -> None:
        """Hold the most that server-tool calls or plugins about to run can charge. The first hold of a request
        takes over the request's whole hold (budgets/turns.py), which can be more than `amount`: a failure is
        charged `amount` at most, never that takeover."""
        self.current = await turn_holds.hold_turn(self.ctx, amount)
        self.is_model_turn = False
        self.fees = amount

    async def settle(self, cost: Decimal, is_byok: bool) -> Decimal:
        """Settle what is held at `cost` (at most the hold); returns what was charged."""
        turn, self.current = self.current, None
        if turn is None:
            return Decimal(0)
        return await turn_holds.settle_turn(self.ctx, turn, cost, is_byok=is_byok)

    async def settle_failure(self, state: Any, turns: Any) -> None:
        """Settle the turn or step that failed by what it may have been billed; add it to the loop's totals."""
        if self.current is None:
            return
        if not self.is_model_turn:  # the fees they may have incurred (a plugin's model calls settle their own)
            state.cost += await self.settle(min(self.fees, self.current.amount), False)
            return
        cut = turns.cut_turn()
        if cut is None:  # never sent, or refused with an error status: nothing billed
            await self.settle(Decimal(0), False)
            return
        usage, candidate, is_byok = cut
        charged = await self.settle(price(self.ctx, candidate, usage), is_byok)
        state.turns += 1
        state.add_usage(usage)
        state.cost += charged

    async def close(self) -> None:
        """Release a hold left by an unexpected failure (nothing was sent for it)."""
        await self.settle(Decimal(0), False)
