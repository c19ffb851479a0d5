"""The data plane's database writer thread: budget holds, settlements and (on SQLite) Generation rows.

Every inference request takes a budget hold before its upstream call, so the hand-off to a thread that may
use the database sits on the critical path. asgiref's `sync_to_async(thread_sensitive=True)` costs about
105 us per call in the running gateway (context copy, thread-local bookkeeping); a plain single-thread
executor costs about 70 us (measured with wrk at one connection, SQLite). The writes share this one thread
and its one connection, so on SQLite they never wait on each other's write lock inside the process.

Inside `async_to_sync` (tests that call a middleware from a synchronous test, inside its transaction) the
call goes to asgiref instead, which runs it on the calling thread and its connection, as before.

A call that fails because the database is unreachable closes the thread's broken connection before the
error reaches the caller (the next call opens a fresh one). A call that gets no answer at all is given up
after `GATEWAY_DB_DEADLINE_SECONDS` and its socket shut down (gateway_project/db_deadline.py).

`DatabaseThread` is the mechanism (one thread, its own connection, closed at shutdown); the accounting
writer on PostgreSQL has one of its own (inference/recorder.py).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, sync_to_async
from django.db import close_old_connections

from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS
from gateway_project.db_deadline import deadline_seconds, future_within_deadline, tracked

T = TypeVar("T")


def _guarded(fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
    try:
        return tracked(fn, *args, **kwargs)
    except DATABASE_UNAVAILABLE_ERRORS:
        close_old_connections()  # CONN_HEALTH_CHECKS / errors_occurred decide; a broken one is dropped
        raise


class DatabaseThread:
    """One thread with its own database connection, started on first use."""

    def __init__(self, name: str, deadline_factor: float = 1.0) -> None:
        self.name = name
        self.deadline_factor = deadline_factor  # times GATEWAY_DB_DEADLINE_SECONDS a call may take
        self._executor: ThreadPoolExecutor | None = None

    def _get_executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)
        return self._executor

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on this thread, under the deadline (gateway_project/db_deadline.py)."""
        future = asyncio.get_running_loop().run_in_executor(self._get_executor(), _guarded, fn, args, kwargs)
        return await future_within_deadline(future, deadline_seconds() * self.deadline_factor)

    def queue_depth(self) -> int:
        """Calls waiting for the thread (the one running not included); the `/metrics` queue-depth gauge."""
        return 0 if self._executor is None else self._executor._work_queue.qsize()

    def shutdown(self) -> None:
        """Close the thread's database connection and stop it (process or test-session end)."""
        if self._executor is not None:
            from django.db import connections

            self._executor.submit(connections.close_all).result(timeout=10)
            self._executor.shutdown(wait=True)
            self._executor = None


data_plane_thread = DatabaseThread("gateway-db")


def in_db_thread(fn: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """An async version of `fn` that runs it on the data plane's database thread."""
    fallback = sync_to_async(fn, thread_sensitive=True)

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> T:
        if getattr(AsyncToSync.executors, "current", None) is not None:
            return await fallback(*args, **kwargs)
        return await data_plane_thread.run(fn, *args, **kwargs)

    return call


_postgresql: bool | None = None


def loop_client_usable() -> bool:
    """True when a data plane statement may go over the event loop's own PostgreSQL connection
    (gateway_project/loop_pg.py) instead of this thread: the database is PostgreSQL and the caller is not
    inside `async_to_sync` (a synchronous test calling the data plane inside its transaction, which only the
    calling thread's connection sees)."""
    global _postgresql
    if _postgresql is None:
        from django.db import DEFAULT_DB_ALIAS, connections

        _postgresql = connections[DEFAULT_DB_ALIAS].vendor == "postgresql"
    return _postgresql and getattr(AsyncToSync.executors, "current", None) is None


def shutdown() -> None:
    """Close the data plane thread's database connection and stop it, and the event loops' PostgreSQL
    connections (process or test-session end)."""
    from gateway_project import loop_pg

    data_plane_thread.shutdown()
    loop_pg.close_all()
