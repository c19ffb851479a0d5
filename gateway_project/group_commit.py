"""Group commit: items submitted close together on one event loop are written by one call, and none is lost.

Used by the accounting writer (Generation rows, inference/recorder.py) and the budget settler (spend
settlements, budgets/settler.py). A caller awaits its own item's write (`submit`); a cancellation of the
caller (a second one included) does not take the item out of the queue. Each event loop has its own queue
(asyncio futures belong to one loop). The queue waits `flush_ms()` milliseconds, or until `max_batch`
items are pending, and hands the batch to `write_batch`. While the database is unreachable (a restart, a
failover) the batch is retried with backoff for up to `retry_seconds()`; a batch that fails otherwise, or
for longer, is written item by item with `write_one`, so one bad item cannot lose the others; an item that
still fails is counted in `failed` and reported to `on_failure` (which logs it), and its caller returns
normally.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS

T = TypeVar("T")
logger = logging.getLogger("gateway.group_commit")


async def retry_while_unavailable(
    write: Callable[[], Awaitable[None]], *, seconds: float, what: str, log: logging.Logger = logger
) -> None:
    """Run `write`, retrying with backoff (0.1 s doubling to 2 s) while the database is unreachable."""
    deadline = time.monotonic() + seconds
    delay = 0.1
    while True:
        try:
            await write()
            return
        except DATABASE_UNAVAILABLE_ERRORS as error:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("database unavailable, retrying %s: %s", what, error)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


class _Queue(Generic[T]):
    """The pending items of one event loop and the task that writes them."""

    def __init__(self) -> None:
        self.pending: list[tuple[T, asyncio.Future]] = []
        self.writing = 0  # items taken out of `pending` whose batch is being written
        self.task: asyncio.Task | None = None


class GroupCommit(Generic[T]):
    def __init__(
        self,
        *,
        write_batch: Callable[[list[T]], Awaitable[None]],
        write_one: Callable[[T], Awaitable[None]],
        flush_ms: Callable[[], float],
        on_failure: Callable[[T], None],
        max_batch: int = 500,
    ) -> None:
        self.write_batch = write_batch
        self.write_one = write_one
        self.flush_ms = flush_ms
        self.on_failure = on_failure
        self.max_batch = max_batch
        self.failed = 0  # items given up since the process started
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue[T]] = weakref.WeakKeyDictionary()

    async def submit(self, item: T) -> None:
        """Queue `item` and wait until it is written (or given up and reported to on_failure)."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future = loop.create_future()
        queue.pending.append((item, future))
        if queue.task is None:
            queue.task = loop.create_task(self._drain(queue))
        # Not shielded: a cancelled caller cancels only its future; the item stays in the queue and is written
        # (the writer skips futures already done). `shield` cost an extra future and two callbacks per item.
        await future

    def in_flight(self) -> int:
        """Items of the running event loop not written yet (the shutdown drain waits for 0)."""
        queue = self._queues.get(asyncio.get_running_loop())
        return 0 if queue is None else len(queue.pending) + queue.writing

    async def _drain(self, queue: _Queue[T]) -> None:
        try:
            delay = self.flush_ms() / 1000
            while queue.pending:
                if delay and len(queue.pending) < self.max_batch:
                    await asyncio.sleep(delay)
                batch, queue.pending = queue.pending[: self.max_batch], queue.pending[self.max_batch :]
                queue.writing = len(batch)
                try:
                    await self._write(batch)
                finally:
                    queue.writing = 0
        finally:
            queue.task = None

    async def _write(self, batch: list[tuple[T, asyncio.Future]]) -> None:
        try:
            await self.write_batch([item for item, _ in batch])
        except Exception:
            for item, future in batch:
                try:
                    await self.write_one(item)
                except Exception:
                    self.failed += 1
                    self.on_failure(item)
                if not future.done():
                    future.set_result(None)
            return
        for _, future in batch:
            if not future.done():
                future.set_result(None)
