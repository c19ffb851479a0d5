"""Writes Generation rows off the client's critical path, group-committed, without losing any.

Every request awaits the commit of its own row (AccountingMiddleware, in `finally`, after the answer went
out), so nothing is fire-and-forget. Rows of requests that finish close together are written in one
transaction: the writer waits up to `GATEWAY_ACCOUNTING_FLUSH_MS` (or until `MAX_BATCH` rows) and writes
them with one bulk insert. On PostgreSQL and other server databases the writes run on a dedicated thread
with its own connection, so they never queue behind the request path's own (rare) database reads; on SQLite
they run on Django's shared sync thread. While the database is unreachable (OperationalError or
InterfaceError: a restart, a failover) the batch is retried with backoff for up to
`GATEWAY_ACCOUNTING_RETRY_SECONDS`, so a request that completed during a restart keeps its row. A batch
that fails otherwise is retried row by row, so one bad row cannot lose the others; a row that still fails
is logged with its request id.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection

from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS
from inference.accounting import record_generations_sync
from inference.pipeline.context import Context

logger = logging.getLogger("gateway.accounting")
MAX_BATCH = 500
_executor: ThreadPoolExecutor | None = None


def _in_writer_thread(contexts: list[Context]) -> None:
    close_old_connections()
    try:
        record_generations_sync(contexts)
    finally:
        close_old_connections()


async def _write(contexts: list[Context]) -> None:
    global _executor
    if connection.vendor == "sqlite":
        await database_sync_to_async(record_generations_sync)(contexts)
        return
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gateway-accounting")
    await asyncio.get_running_loop().run_in_executor(_executor, _in_writer_thread, contexts)


class GenerationWriter:
    """The group-commit queue of one event loop."""

    def __init__(self) -> None:
        self.pending: list[tuple[Context, asyncio.Future]] = []
        self.task: asyncio.Task | None = None

    async def write(self, ctx: Context) -> None:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((ctx, future))
        if self.task is None:
            self.task = asyncio.ensure_future(self._drain())
        await asyncio.shield(future)

    async def _drain(self) -> None:
        try:
            delay = settings.GATEWAY_ACCOUNTING_FLUSH_MS / 1000
            while self.pending:
                if delay and len(self.pending) < MAX_BATCH:
                    await asyncio.sleep(delay)
                batch, self.pending = self.pending[:MAX_BATCH], self.pending[MAX_BATCH:]
                await self._write_batch(batch)
        finally:
            self.task = None

    async def _write_batch(self, batch: list[tuple[Context, asyncio.Future]]) -> None:
        try:
            await _write_while_unavailable([ctx for ctx, _ in batch])
        except Exception:
            for ctx, future in batch:
                try:
                    await _write([ctx])
                except Exception:
                    logger.exception("could not record generation %s", ctx.request_id)
                if not future.done():
                    future.set_result(None)
            return
        for _, future in batch:
            if not future.done():
                future.set_result(None)


async def _write_while_unavailable(contexts: list[Context]) -> None:
    """Write, retrying with backoff while the database is unreachable (each try opens a fresh connection)."""
    deadline = time.monotonic() + settings.GATEWAY_ACCOUNTING_RETRY_SECONDS
    delay = 0.1
    while True:
        try:
            await _write(contexts)
            return
        except DATABASE_UNAVAILABLE_ERRORS as error:
            if time.monotonic() + delay > deadline:
                raise
            logger.warning("database unavailable, retrying %d generation rows: %s", len(contexts), error)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


_writers: dict[int, GenerationWriter] = {}


async def record_generation(ctx: Context) -> None:
    """Write the row of this request (group-committed with concurrent ones); survives a second cancellation."""
    loop_id = id(asyncio.get_running_loop())
    writer = _writers.get(loop_id)
    if writer is None:
        writer = _writers[loop_id] = GenerationWriter()
    await writer.write(ctx)


def shutdown() -> None:
    """Close the writer thread's database connection and stop the thread (process or test-session end)."""
    global _executor
    if _executor is not None:
        from django.db import connections

        _executor.submit(connections.close_all).result(timeout=10)
        _executor.shutdown(wait=True)
        _executor = None
