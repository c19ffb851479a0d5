"""Spend enforcement of the data plane: reserve the worst-case cost before the upstream call, settle after.

Settlements are group-committed (budgets/settler.py); a hold whose client went away while it was being
taken is released at once, on its own (`spend_settle`).

Runs after GuardrailMiddleware (which appends guardrail limits to ctx.spend_limits) and before
AccountingMiddleware (which records the Generation and sets ctx.outcome.cost).
"""

from __future__ import annotations

import asyncio
import logging

from budgets import counters, keeper, settler
from budgets.counters import (
    Hold,
    LimitExceeded,
    Settlement,
    spend_reserve,
    spend_settle,
)
from budgets.recovery import hold_record
from budgets.selectors import key_spend_limit, workspace_spend_limits
from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS, GatewayError
from gateway_project.api.serializers import format_timestamp
from gateway_project.db_deadline import db_reader
from gateway_project.db_thread import in_db_thread, loop_client_usable
from gateway_project.pipeline import send_ahead
from gateway_project.policy_cache import PolicyCache
from inference.pipeline.context import Candidate, Context, SpendLimit
from metering.cost import OWNED_BY_TURNS, ROW_NOT_WRITTEN, settlement_units, units_to_usd, usd_to_units
from metering.estimate import request_prompt, worst_case_cost

logger = logging.getLogger("gateway.budgets")
_workspace_limits = PolicyCache("workspace-budgets")
_load_workspace_limits = db_reader(workspace_spend_limits)
_reserve_on_thread = in_db_thread(spend_reserve)
_settle_on_thread = in_db_thread(spend_settle)


async def _reserve(**kwargs) -> Hold:
    """The hold: on PostgreSQL its statement goes over the event loop's connection (gateway_project/loop_pg.py,
    no thread hop); on SQLite, inside a test's `async_to_sync` transaction, or for a naive datetime it runs on the
    data plane's database thread as before."""
    if loop_client_usable() and kwargs["now"].tzinfo is not None:
        return await counters.spend_reserve_async(**kwargs, on_thread=_reserve_on_thread)
    return await _reserve_on_thread(**kwargs)


async def _settle(*, hold: Hold, cost_units: int, is_byok: bool) -> None:
    """One settlement on its own (a hold released because its client went away), sent like the hold."""
    if loop_client_usable():
        await counters.spend_settle_many_async([Settlement(hold=hold, cost_units=cost_units, is_byok=is_byok)])
    else:
        await _settle_on_thread(hold=hold, cost_units=cost_units, is_byok=is_byok)


def clear_caches() -> None:
    """Forget cached budgets and counter ids (tests: the database was reset under the process)."""
    _workspace_limits.clear()
    counters._counter_ids.clear()


async def _candidates(ctx: Context) -> list[Candidate]:
    if ctx.candidates is not None:
        return ctx.candidates
    from inference.routing import resolve_candidates

    return await resolve_candidates(ctx)


async def applicable_limits(ctx: Context) -> list[SpendLimit]:
    """Workspace budgets (cached per policy version), the key's own limit, and the guardrails' limits."""
    principal = ctx.principal
    workspace_id = principal.workspace_id
    limits = list(
        await _workspace_limits.get(
            ctx.policy_version,
            workspace_id,
            lambda: _load_workspace_limits(workspace_id),
            scope=principal.organization_id,
        )
    )
    key_limit = key_spend_limit(principal)
    if key_limit is not None:
        limits.append(key_limit)
    limits.extend(ctx.spend_limits)
    return limits


def _usd(units: int) -> float:
    return float(units_to_usd(units).quantize(units_to_usd(1)).normalize())


def budget_exceeded_error(exc: LimitExceeded) -> GatewayError:
    """402 naming the budget and when it resets."""
    limit = exc.limit
    resets = format_timestamp(exc.resets_at) if exc.resets_at else None
    when = f"It resets at {resets}." if resets else "It never resets."
    message = (
        f"{limit.name} of ${limit.limit_usd.normalize():f} exceeded: ${units_to_usd(exc.spent_units):.6f} spent, "
        f"${units_to_usd(exc.reserved_units):.6f} held by requests in flight, and this request may cost up to "
        f"${units_to_usd(exc.amount_units):.6f}. {when}"
    )
    metadata = {
        "budget": {
            "scope": limit.scope,
            "name": limit.name,
            "interval": limit.interval,
            "limit_usd": float(limit.limit_usd),
            "spent_usd": _usd(exc.spent_units),
            "reserved_usd": _usd(exc.reserved_units),
            "resets_at": resets,
        },
        "request_max_cost_usd": _usd(exc.amount_units),
    }
    return GatewayError(402, message, metadata=metadata)


async def _release_when_reserved(task: asyncio.Future) -> None:
    """A hold whose request ended before it was admitted (refused by another check, failed, or gone): once the
    hold is taken, release it at once."""
    try:
        hold = await task
    except LimitExceeded as refusal:  # refused: nothing is held
        # Its traceback holds the frames that awaited the task (this one among them), which hold the task that
        # holds the refusal: dropped (the 402 carries what it says), so the request is freed without the cyclic
        # collector. A failure of the hold keeps its traceback: it may be on its way to the error log.
        refusal.__traceback__ = None
        return
    except Exception:  # failed: nothing is held
        return
    try:
        await asyncio.shield(_settle(hold=hold, cost_units=0, is_byok=False))
    except DATABASE_UNAVAILABLE_ERRORS:  # written by the keeper once the database answers again
        keeper.park(Settlement(hold=hold, cost_units=0, is_byok=False))


class BudgetMiddleware:
    """402 when any limit cannot take the request's worst-case cost; otherwise hold it, then settle."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        limits = await applicable_limits(ctx)
        if not limits:
            await self.get_response(ctx)
            return
        try:
            candidates = await _candidates(ctx)
        except GatewayError:
            # Routing fails the same way inside the chain, where accounting records the failed request; hold
            # nothing, but a limit already reached still refuses (DECISIONS §8).
            candidates = []
        amount = usd_to_units(worst_case_cost(ctx.body, candidates, prompt=request_prompt(ctx)))
        # The hold is sent now and awaited where the request is about to reach the upstream (or to answer), after
        # the checks sent ahead before it (gateway_project.pipeline.Admission): its round trip overlaps the
        # preparation of the upstream call. A task, so that a client going away meanwhile cannot cut it short.
        task = asyncio.get_running_loop().create_task(
            _reserve(
                limits=limits,
                amount_units=amount,
                now=ctx.created_at,
                request_id=ctx.request_id,
                record=hold_record(ctx),  # in the hold's own statement: the row rebuilt if the process dies
            )
        )

        async def hold_taken() -> None:
            try:
                ctx.reservation = await asyncio.shield(task)
            except LimitExceeded as exc:
                raise budget_exceeded_error(exc) from None

        send_ahead(ctx, hold_taken)  # after the rate-limit check, when one was sent: a 429 comes before a 402
        try:
            # One turn of the loop: the task's first step sends the hold's statement (psycopg writes it before the
            # task first waits, on an idle connection; behind busy ones it leaves with the next batch), and the
            # rate-limit check queued before it leaves too; the request goes on while both travel.
            await asyncio.sleep(0)
            await self.get_response(ctx)
        finally:
            hold = ctx.reservation
            if hold is not None:
                await self._settle(ctx, hold)
            else:  # never admitted: the hold (if it was taken) is released
                await _release_when_reserved(task)

    async def _settle(self, ctx: Context, hold: Hold) -> None:
        if ctx.extras.get(OWNED_BY_TURNS):
            return  # per-turn holds took this hold over and settled every cost (budgets/turns.py)
        if ctx.extras.get(ROW_NOT_WRITTEN):
            # No row: the hold is not renewed any more, expires, and the reaper charges it with the row it rebuilds
            # (budgets/recovery.py), so the counters and the rows agree.
            keeper.settled([hold.reservation_id])
            logger.warning("request %s has no row: its hold is left for the reaper to charge", ctx.request_id)
            return
        units = settlement_units(ctx, hold.amount_units)  # the Generation row's figure, at most the hold
        settlement = Settlement(hold=hold, cost_units=units, is_byok=ctx.outcome.credential_is_byok)
        # Group-committed with concurrent requests' settlements (budgets/settler.py); shielded there: a second
        # cancellation only stops the waiting, the settlement stays queued. A failure is logged there.
        await settler.settle(settlement)
