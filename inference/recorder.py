"""Writes Generation rows off the client's critical path, group-committed, without losing any.

Every request awaits the commit of its own row (AccountingMiddleware, in `finally`, after the answer went
out), so nothing is fire-and-forget. Rows of requests that finish close together are written in one
transaction: the writer waits up to `GATEWAY_ACCOUNTING_FLUSH_MS` (or until `MAX_BATCH` rows) and writes
them with one bulk insert. On PostgreSQL and other server databases the writes run on a dedicated thread
with its own connection, so they never queue behind the request path's own (rare) database reads; on SQLite
they run on the data plane's database thread with the budget holds (gateway_project/db_thread.py). While
the database is unreachable (OperationalError or InterfaceError: a restart, a failover) the batch is
retried with backoff for up to `GATEWAY_ACCOUNTING_RETRY_SECONDS`, so a request that completed during a
restart keeps its row. A batch that fails otherwise is retried row by row, so one bad row cannot lose the
others; a row that still fails for its content (a value the database refuses, which the request validation
should have stopped) is written once more without its free-form fields (`trace`, `metadata`, NUL characters
in `session_id`), so its usage and cost are kept; a row that cannot be written even so is logged with its
request id and counted in `writer.failed` (logged with every loss); a request that holds a budget then
leaves its hold unsettled, so that the reaper writes its row from the hold (budgets/recovery.py). The queue itself is
gateway_project/group_commit.py.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import close_old_connections, connection

from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS
from gateway_project.db_thread import DatabaseThread, in_db_thread
from gateway_project.group_commit import GroupCommit, retry_while_unavailable
from inference.accounting import STRIP_FREE_FORM, record_generations_sync
from inference.pipeline.context import Context
from metering.cost import ROW_NOT_WRITTEN

logger = logging.getLogger("gateway.accounting")
MAX_BATCH = 500
# PostgreSQL and other server databases: the rows are written on a thread and connection of their own.
_writer_thread = DatabaseThread("gateway-accounting", deadline_factor=6)  # batches: 30 s by default


def _in_writer_thread(contexts: list[Context]) -> None:
    close_old_connections()
    try:
        record_generations_sync(contexts)
    finally:
        close_old_connections()


_record_in_db_thread = in_db_thread(record_generations_sync)


async def _write(contexts: list[Context]) -> None:
    if connection.vendor == "sqlite":
        await _record_in_db_thread(contexts)
        return
    await _writer_thread.run(_in_writer_thread, contexts)


async def _write_while_unavailable(contexts: list[Context]) -> None:
    """Write, retrying with backoff while the database is unreachable (each try opens a fresh connection)."""
    await retry_while_unavailable(
        lambda: _write(contexts),
        seconds=settings.GATEWAY_ACCOUNTING_RETRY_SECONDS,
        what=f"{len(contexts)} generation rows",
        log=logger,
    )


async def _write_one(ctx: Context) -> None:
    try:
        await _write([ctx])
    except DATABASE_UNAVAILABLE_ERRORS:
        raise
    except Exception:
        logger.exception("generation %s refused; writing it without trace and metadata", ctx.request_id)
        ctx.extras[STRIP_FREE_FORM] = True
        await _write([ctx])


def _failed(ctx: Context) -> None:
    ctx.extras[ROW_NOT_WRITTEN] = True  # a request with a budget hold gets its row from the hold (budgets/recovery.py)
    logger.exception("could not record generation %s (%d rows lost since start)", ctx.request_id, writer.failed)


writer: GroupCommit[Context] = GroupCommit(
    write_batch=_write_while_unavailable,
    write_one=_write_one,
    flush_ms=lambda: settings.GATEWAY_ACCOUNTING_FLUSH_MS,
    on_failure=_failed,
    max_batch=MAX_BATCH,
)


async def record_generation(ctx: Context) -> None:
    """Write the row of this request (group-committed with concurrent ones); survives a second cancellation."""
    await writer.submit(ctx)


def shutdown() -> None:
    """Close the writer thread's database connection and stop the thread (process or test-session end)."""
    _writer_thread.shutdown()
