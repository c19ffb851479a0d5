"""Settles the spend holds of finished requests, group-committed: one transaction for many requests.

BudgetMiddleware awaits the settlement of its own request (after the answer went out), shielded, so nothing
is fire-and-forget and a second cancellation does not lose it. Settlements of requests that finish within
`GATEWAY_BUDGET_SETTLE_FLUSH_MS` of each other (0: no waiting; requests finishing while a batch is written
still share the next one) are written by `counters.spend_settle_many`: one DELETE of the reservation rows,
one UPDATE per counter; on PostgreSQL one call of the function of migration budgets/0005 doing all of it, sent
from the event loop like the holds (gateway_project/loop_pg.py). While the database is
unreachable the batch is retried with backoff for up to `GATEWAY_ACCOUNTING_RETRY_SECONDS`; a batch that
fails otherwise (or for longer) is settled request by request with `spend_settle`; a settlement that still
fails is logged and handed to the budget keeper (budgets/keeper.py), which writes it once the database
answers again and keeps its hold renewed meanwhile; if the process dies first, the hold expires and is reaped.
Every settlement is applied once: a write whose commit succeeded but whose answer was lost, written again by a
retry or by the request-by-request fallback, skips it (its id, `budgets_appliedsettlement`).
"""

from __future__ import annotations

import logging

from django.conf import settings

from budgets import keeper
from budgets.counters import Hold, Settlement, spend_settle, spend_settle_many, spend_settle_many_async
from gateway_project.db_thread import in_db_thread, loop_client_usable
from gateway_project.group_commit import GroupCommit, retry_while_unavailable

logger = logging.getLogger("gateway.budgets")
MAX_BATCH = 500


# PostgreSQL: one statement over the event loop's own connection, like the holds (gateway_project/loop_pg.py; a
# broken connection is replaced on the next call). Otherwise on the data plane's database thread
# (gateway_project/db_thread.py), where a connection broken by a database restart is closed before the error
# comes back, so the next try opens a fresh one.
_settle_many_on_thread = in_db_thread(spend_settle_many)
_settle_one_on_thread = in_db_thread(spend_settle)


async def _settle_many(settlements: list[Settlement]) -> None:
    if loop_client_usable():
        await spend_settle_many_async(settlements)
    else:
        await _settle_many_on_thread(settlements)


async def _settle_one(*, hold: Hold, cost_units: int, is_byok: bool) -> None:
    if loop_client_usable():
        await spend_settle_many_async([Settlement(hold=hold, cost_units=cost_units, is_byok=is_byok)])
    else:
        await _settle_one_on_thread(hold=hold, cost_units=cost_units, is_byok=is_byok)


async def _settle_batch(settlements: list[Settlement]) -> None:
    await _settle_many(settlements)


async def _write_batch(settlements: list[Settlement]) -> None:
    await retry_while_unavailable(
        lambda: _settle_batch(settlements),
        seconds=settings.GATEWAY_ACCOUNTING_RETRY_SECONDS,
        what=f"{len(settlements)} budget settlements",
        log=logger,
    )


async def _write_one(settlement: Settlement) -> None:
    await _settle_one(hold=settlement.hold, cost_units=settlement.cost_units, is_byok=settlement.is_byok)


def _failed(settlement: Settlement) -> None:
    logger.exception(
        "settling reservation %s failed; the budget keeper writes it once the database answers again",
        settlement.hold.reservation_id,
    )
    keeper.park(settlement)


settler: GroupCommit[Settlement] = GroupCommit(
    write_batch=_write_batch,
    write_one=_write_one,
    flush_ms=lambda: settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS,
    on_failure=_failed,
    max_batch=MAX_BATCH,
)


async def settle(settlement: Settlement) -> None:
    """Settle this request's hold together with concurrent ones; returns once it is written (or given up)."""
    await settler.submit(settlement)
