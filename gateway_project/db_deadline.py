"""Deadlines on the data plane's database calls, so an unresponsive database is a 503, never a hang.

A database that drops packets (a black-holed network, a frozen server) answers no error: a query waits
forever on its socket, and with it the request and every later call queued on the same thread. Each data
plane call therefore runs under a deadline (`GATEWAY_DB_DEADLINE_SECONDS`, default 5 s): past it the caller
gets an `OperationalError` (503 with `Retry-After`), and the socket of the call that is stuck is shut down,
which makes the blocked driver raise at once, frees the thread, and has its broken connection replaced by
a fresh one on the next call. So the database coming back is noticed by the very next request.

New connections are bounded by libpq's `connect_timeout`, idle ones by TCP keepalives and
`tcp_user_timeout` (settings.py, `DATABASE_CONNECT_TIMEOUT` and friends).
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections

T = TypeVar("T")
_calls: dict[int, tuple[float, Any]] = {}  # thread id -> (start, the thread's DatabaseWrapper) of calls running


def tracked(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn` on this (database) thread, registered so a deadline can abort it."""
    ident = threading.get_ident()
    _calls[ident] = (time.monotonic(), connections[DEFAULT_DB_ALIAS])
    try:
        return fn(*args, **kwargs)
    finally:
        _calls.pop(ident, None)


def shut_down_socket(pgconn: Any) -> None:
    """Shut a libpq connection's socket down (psycopg's `pgconn`): a wait on it, or the statement it carries,
    fails at once. Used by the deadlines of the database thread (below) and of the event loop's connections
    (gateway_project/loop_pg.py)."""
    try:
        sock = socket.socket(fileno=os.dup(pgconn.socket))
    except Exception:  # closed meanwhile
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


def _shut_down_socket(wrapper: Any) -> None:
    connection = getattr(wrapper, "connection", None)
    if connection is None or getattr(wrapper, "vendor", "") != "postgresql":
        return
    shut_down_socket(connection.pgconn)


def abort_stuck(older_than: float) -> None:
    """Shut down the sockets of database calls running for `older_than` seconds or more."""
    now = time.monotonic()
    for started, wrapper in list(_calls.values()):
        if now - started >= older_than:
            _shut_down_socket(wrapper)


def deadline_seconds() -> float:
    return settings.GATEWAY_DB_DEADLINE_SECONDS


async def within_deadline(awaitable: Awaitable[T], seconds: float | None = None) -> T:
    """`await awaitable`, or OperationalError (503) and the stuck call aborted once `seconds` have passed.

    Not `asyncio.wait_for`: on its timeout it cancels the awaitable and waits for the cancellation to finish,
    and asgiref's `sync_to_async` finishes only when its thread's call returns, which on a black-holed
    connection is never (the stuck call was aborted only after `wait_for` returned): the request hung (30 s,
    the client's timeout, in test_database_blackhole.py) instead of a 503 at the deadline. The awaitable is
    cancelled and left to finish on its own."""
    limit = deadline_seconds() if seconds is None else seconds
    if not limit:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=limit)
    except asyncio.CancelledError:  # the caller is cancelled: so is its call (as `wait_for` did)
        _give_up(task)
        raise
    if done:
        return task.result()
    abort_stuck(limit)
    _give_up(task)
    raise OperationalError(f"the database did not answer within {limit:g} s") from None


def _give_up(task: asyncio.Future) -> None:
    task.cancel()
    task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a task given up on logs nothing


async def future_within_deadline(future: asyncio.Future, seconds: float) -> Any:
    """`within_deadline` for an executor future, with a timer instead of a task (the budget hold's hot path:
    about 2 us instead of about 15 us for `asyncio.wait_for`)."""
    if not seconds:
        return await future
    expired = False

    def expire() -> None:
        nonlocal expired
        if not future.done():
            expired = True
            abort_stuck(seconds)
            future.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await future
    except asyncio.CancelledError:
        if expired:
            raise OperationalError(f"the database did not answer within {seconds:g} s") from None
        raise
    finally:
        timer.cancel()


def db_reader(fn: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """`sync_to_async(fn, thread_sensitive=True)` for the data plane's reads, under the deadline."""
    call = sync_to_async(functools.partial(tracked, fn), thread_sensitive=True)

    @functools.wraps(fn)
    async def read(*args: Any, **kwargs: Any) -> T:
        return await within_deadline(call(*args, **kwargs))

    return read
