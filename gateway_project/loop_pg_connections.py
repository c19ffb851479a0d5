"""The connections of an event loop's PostgreSQL pool (gateway_project/loop_pg.py): the `psycopg_pool` pool,
opened on first use with the parameters of Django's connection (`connection_params`), and the connections taken
out of it and kept (parked) while they work.

A connection is taken out of the pool once and kept while it works, not taken and returned per statement
(`getconn`/`putconn` and their checks cost about 40 us per statement). A connection the server closed while it
was parked (a restart, `pg_terminate_backend`, an idle timeout) is noticed before it is used (its socket is
readable: one `select` without waiting) and given back; the next statement opens another.

The pool is psycopg_pool's `AsyncNullConnectionPool`: `getconn` opens a connection in the caller's task, now,
`putconn` closes it, nothing connects in the background; the parked connections are the pool. A connection
attempt is made for the statements waiting when it starts and ends with them (`_take`). psycopg_pool's
`AsyncConnectionPool` (before) replaced a broken connection on its own schedule instead: after a failed attempt
it tried again 1, 2, 4 ... s later (up to `reconnect_timeout`, 5 min), and a statement arriving meanwhile waited
for that schedule, so after a database outage holds kept failing for seconds (up to minutes) once the database
was back. `GATEWAY_DB_LOOP_CONNECTIONS` bounds the connections taken (`held`); the psycopg pool itself has no
limit (`max_size=0`), so no `getconn` ever waits for a connection to be returned, the one path on which a null
pool connects in the background, on a schedule.
"""

from __future__ import annotations

import asyncio
import collections
import select
from collections.abc import Callable
from typing import Any

import psycopg
from django import db as django_db
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg_pool import AsyncNullConnectionPool, PoolTimeout

from gateway_project.loop_pg_errors import django_error

APPLICATION_NAME = "gateway-data-plane"
# Django's connection parameters that are not libpq's.
_NOT_LIBPQ = ("context", "cursor_factory", "prepare_threshold", "server_side_binding", "isolation_level", "pool")
_BAD = psycopg.pq.ConnStatus.BAD


def connection_params(alias: str = DEFAULT_DB_ALIAS) -> dict[str, Any]:
    """libpq parameters of Django's connection `alias` (read when a pool opens: tests rename the database)."""
    params = dict(connections[alias].get_connection_params())
    for name in _NOT_LIBPQ:
        params.pop(name, None)
    params.setdefault("application_name", APPLICATION_NAME)
    return {name: value for name, value in params.items() if value is not None}


class LoopConnections:
    """The event loop's pool and the connections taken from it (`GATEWAY_DB_LOOP_CONNECTIONS`, default 1;
    autocommit, no check and no reset on return). The statements' side (`loop_pg.LoopDatabase`) holds the
    `queue` of statements waiting for a connection and `_drain(conn)`, which runs them on `conn` (None: one
    taken from the pool first). Once closed it stays closed: no pool, no connection is opened again."""

    queue: collections.deque

    def __init__(self, params: Callable[[], dict[str, Any]] = connection_params, size: int | None = None) -> None:
        self.params = params
        self.size = max(1, int(size or getattr(settings, "GATEWAY_DB_LOOP_CONNECTIONS", 1)))
        self.pool: AsyncNullConnectionPool | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.parked: list[psycopg.AsyncConnection] = []  # taken from the pool, idle
        self.cursors: dict[psycopg.AsyncConnection, psycopg.AsyncCursor] = {}  # one per connection taken
        self.held = 0  # connections taken from the pool (parked, running a statement, or being taken)
        self.closed = False
        # The connection attempts in flight: their time bound -> the `seq` of the first statement queued after
        # the attempt started (the statements before it are the ones it is made for).
        self.connecting: dict[asyncio.Timeout, int] = {}

    async def _drain(self, conn: psycopg.AsyncConnection | None) -> None:
        raise NotImplementedError

    def _pool(self) -> AsyncNullConnectionPool:
        pool = self.pool
        if pool is None:
            if self.closed:
                raise django_db.OperationalError("the database connections were closed")
            pool = self.pool = AsyncNullConnectionPool(
                "",
                kwargs={**self.params(), "autocommit": True},
                min_size=0,
                max_size=0,  # no limit: `held` is (the module doc)
                open=False,
                check=None,
                reset=None,
                name=APPLICATION_NAME,
                num_workers=1,  # nothing runs in the background but closing connections given back
            )
            self.loop = asyncio.get_running_loop()
        return pool

    async def _take(self, timeout: float | None, first: int) -> psycopg.AsyncConnection:
        """A new connection, its attempt made now (no waiting on a reconnection schedule), for the statements
        queued before `first` (their `seq`); counted in `held` by the caller. The attempt ends after `timeout`
        seconds, after libpq's `connect_timeout`, or as soon as none of those statements waits for it any more
        (`_abandon_attempts`: past their deadlines, or their callers gone), so an attempt made while the database
        was unreachable does not hold up a statement that arrives once it is back: that one gets its own."""
        if self.closed:
            raise django_db.OperationalError("the database connections were closed")
        pool = self._pool()
        try:
            if pool.closed:
                await pool.open(wait=False)
            # getconn's timeout becomes the attempt's connect_timeout: the configured one, else `timeout`
            connect_timeout = float(pool.kwargs.get("connect_timeout") or 0) or timeout or None
            async with asyncio.timeout(timeout or None) as bound:  # a delay, not a loop time
                self.connecting[bound] = first
                try:
                    return await pool.getconn(timeout=connect_timeout)
                finally:
                    del self.connecting[bound]
        except (PoolTimeout, TimeoutError):
            raise django_db.OperationalError(
                f"the database did not answer within {timeout:g} s (connecting)"
                if timeout
                else "could not connect to the database"
            ) from None
        except psycopg.Error as error:
            raise django_error(error) from None

    def _abandon_attempts(self) -> None:
        """End the connection attempts that no statement waits for any more (a statement left the queue without
        its result: past its deadline, or its caller gone). The statements queued after an attempt started get
        an attempt of their own (`LoopDatabase._connect`): the database may be back meanwhile."""
        queue = self.queue
        while queue and queue[0].future.done():
            queue.popleft()
        oldest = queue[0].seq if queue else None
        now = self.loop.time()
        for bound, first in list(self.connecting.items()):
            if (oldest is None or oldest >= first) and not bound.expired():
                bound.reschedule(now)

    def _end_attempts(self) -> None:
        """End every connection attempt in flight (the database closes; on its loop): the pool's `close` waits
        for them."""
        for bound in list(self.connecting):
            if not bound.expired():
                bound.reschedule(self.loop.time())

    def _park(self, conn: psycopg.AsyncConnection) -> None:
        """`conn` is idle: run what is queued on it, else keep it."""
        if self.closed or conn.closed or conn.pgconn.status == _BAD:
            self._give_back(conn)
            return
        if self.queue:
            self.loop.create_task(self._drain(conn))
            return
        self.parked.append(conn)

    def _unpark(self) -> psycopg.AsyncConnection | None:
        """A parked connection still open, or None. The server closing an idle connection (a restart,
        `pg_terminate_backend`, an idle timeout) makes its socket readable: checked here, at no cost to the loop
        while idle (one `select` with no wait, where watching every idle socket cost a reader removed and added
        again per statement); such a connection is given back (closed), and the next statement opens another."""
        while self.parked:
            conn = self.parked.pop()
            pgconn = conn.pgconn
            try:
                if not select.select((pgconn.socket,), (), (), 0)[0]:
                    return conn
            except (OSError, ValueError, psycopg.Error):
                pass
            # Something arrived while it was idle: nearly always the server's last words before it closed the
            # connection (a rare notice or parameter change costs a new connection, never a failed statement).
            pgconn.finish()
            self._give_back(conn)
        return None

    def _give_back(self, conn: psycopg.AsyncConnection) -> None:
        """Return a connection to the pool, which closes it."""
        self.held -= 1
        self.cursors.pop(conn, None)
        pool = self.pool
        if pool is None or pool.closed or self.loop.is_closed():
            conn.pgconn.finish()
            return
        if conn.pgconn.status == _BAD and not conn.closed:
            conn.pgconn.finish()
        self.loop.create_task(pool.putconn(conn))
        if self.queue and not self.closed:
            self._start_drain()

    def _start_drain(self) -> None:
        if self.held < self.size:
            self.held += 1
            self.loop.create_task(self._drain(None))

    def connections_open(self) -> int:
        return self.held

    def _finish_parked(self) -> None:
        """Close the parked connections (the database closes)."""
        while self.parked:
            conn = self.parked.pop()
            self.held -= 1
            conn.pgconn.finish()
