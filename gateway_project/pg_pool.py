"""The data plane's PostgreSQL statements (the budget hold, the settlement) on psycopg's async connections.

Sending the hold through the data plane's database thread (gateway_project/db_thread.py) costs more CPU than
the statement itself (the executor hand-off and two wake-ups, docs/performance.md), so on PostgreSQL these
statements go from the event loop: one `psycopg_pool.AsyncConnectionPool` per event loop (asyncio objects
belong to one loop), its connections opened with Django's parameters (the test database, `connect_timeout`,
keepalives, the server-side `statement_timeout` / `lock_timeout` of gateway_project/db_options.py), in
autocommit, parameters bound by psycopg.

- Sizes and waits: `DATABASE_POOL_MIN_SIZE`, `DATABASE_POOL_MAX_SIZE`, `DATABASE_POOL_MAX_IDLE_SECONDS`
  (docs/operations.md). A caller waits for a connection at most its deadline (`GATEWAY_DB_DEADLINE_SECONDS`).
- Prepared statements: psycopg prepares a statement once a connection has run it `DATABASE_PREPARE_THRESHOLD`
  times (0: on its first use; `none`: never, for a pooler that cannot keep them). Behind a pooler that loses a
  session's prepared statements (PgBouncer before 1.21 in transaction mode), the database answers that the
  statement does not exist (or exists already): the statement was not run, so it is sent again unprepared and
  the process stops preparing (one warning in the log).
- Failures come out as Django's database exceptions (`django.db.OperationalError` for a lost or unreachable
  server, a statement or lock timeout; the class matching psycopg's otherwise), so the data plane's 503
  mapping (gateway_project/api/errors.py) is unchanged. A statement without an answer within its deadline:
  its connection's socket is shut down (psycopg raises at once, the pool discards the connection) and the
  caller gets OperationalError. A connection the server closed while idle is noticed when it is taken from the
  pool (its socket is readable: `_check_idle`, no round trip) and replaced.
- A failed connection attempt is not retried in the background for long (`reconnect_timeout` of one
  `connect_timeout`): the next caller starts a new one, so the database coming back is noticed at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import socket
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from django import db as django_db
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg_pool import AsyncConnectionPool, PoolTimeout

logger = logging.getLogger("gateway.pg_pool")
_APPLICATION_NAME = "gateway-data-plane"
# Django's connection parameters that are not libpq's.
_NOT_LIBPQ = ("context", "cursor_factory", "prepare_threshold", "server_side_binding", "isolation_level", "pool")
_DJANGO_ERRORS = (
    django_db.DataError,
    django_db.OperationalError,
    django_db.IntegrityError,
    django_db.InternalError,
    django_db.ProgrammingError,
    django_db.NotSupportedError,
    django_db.DatabaseError,
    django_db.InterfaceError,
    django_db.Error,
)
_NOT_PREPARED_HERE = ("26000", "42P05")  # the session lost its prepared statement / has one of that name already


def django_error(error: psycopg.Error) -> django_db.Error:
    """Django's exception for a psycopg one (as `DatabaseWrapper.wrap_database_errors` maps them)."""
    for django_class in _DJANGO_ERRORS:
        if isinstance(error, getattr(psycopg, django_class.__name__)):
            wrapped = django_class(*error.args)
            wrapped.__cause__ = error
            return wrapped
    return django_db.Error(str(error))  # pragma: no cover - every psycopg error is a psycopg.Error


def connection_params(alias: str = DEFAULT_DB_ALIAS) -> dict[str, Any]:
    """libpq parameters of Django's connection `alias` (read when a pool opens: tests rename the database)."""
    params = dict(connections[alias].get_connection_params())
    for name in _NOT_LIBPQ:
        params.pop(name, None)
    params.setdefault("application_name", _APPLICATION_NAME)
    return {name: value for name, value in params.items() if value is not None}


# False once a pooler showed that this process's sessions cannot keep prepared statements (see the module doc).
prepared_statements = True


def _prepare_threshold() -> int | None:
    return settings.DATABASE_PREPARE_THRESHOLD if prepared_statements else None


async def _check_idle(conn: psycopg.AsyncConnection) -> None:
    """An idle connection in autocommit has nothing to read: data (or end of file) means the server ended it."""
    try:
        readable = select.select([conn.pgconn.socket], [], [], 0)[0]
    except (psycopg.Error, OSError, ValueError):
        readable = True
    if readable or conn.closed:
        await conn.close()  # so the pool discards it (and opens another) instead of offering it again
        raise psycopg.OperationalError("the database closed the idle connection")


def _shut_down(conn: psycopg.AsyncConnection) -> None:
    """Shut the connection's socket down: a statement waiting on it fails at once (psycopg raises)."""
    try:
        sock = socket.socket(fileno=os.dup(conn.pgconn.socket))
    except (psycopg.Error, OSError):
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


class DataPlaneConnection(psycopg.AsyncConnection):
    """psycopg's async connection, waiting on its socket without a timeout loop: psycopg's default wakes up every
    0.1 s (for Ctrl-C in its synchronous twin) through `asyncio.wait_for`, a task and a timer per wait: about a
    fifth of the CPU of a hold's statement here (docs/performance.md). The deadline is ours (`fetch_value`)."""

    async def wait(self, gen, interval: float | None = None):
        return await super().wait(gen, interval=None)


class _NotPreparedHere(Exception):
    """The session does not have the prepared statement psycopg expects (or has one of its name): not run."""


class DataPlanePool:
    """One event loop's pool, opened on first use; `fetch_value(statement, params)` runs one statement."""

    def __init__(self, params: Callable[[], dict[str, Any]] = connection_params) -> None:
        self.params = params
        self.pool: AsyncConnectionPool | None = None
        self._closer: asyncio.Task | None = None

    def _new_pool(self) -> AsyncConnectionPool:
        params = self.params()
        return AsyncConnectionPool(
            connection_class=DataPlaneConnection,
            kwargs={**params, "autocommit": True},
            min_size=settings.DATABASE_POOL_MIN_SIZE,
            max_size=max(settings.DATABASE_POOL_MAX_SIZE, settings.DATABASE_POOL_MIN_SIZE, 1),
            max_idle=settings.DATABASE_POOL_MAX_IDLE_SECONDS,
            timeout=settings.GATEWAY_DB_DEADLINE_SECONDS or 30.0,
            reconnect_timeout=float(params.get("connect_timeout") or 3),
            check=_check_idle,
            configure=_configure,
            name=_APPLICATION_NAME,
            num_workers=1,
            open=False,
        )

    async def _ready(self) -> AsyncConnectionPool:
        if self.pool is None:
            pool = self._new_pool()
            await pool.open(wait=False)
            if self.pool is None:
                self.pool = pool
                self._closer = asyncio.get_running_loop().create_task(self._close_when_cancelled(pool))
            else:  # opened concurrently
                await pool.close()
        return self.pool

    async def _close_when_cancelled(self, pool: AsyncConnectionPool) -> None:
        """Close the pool when the event loop ends (asyncio.run cancels its tasks). The pool's own tasks carry on
        through a cancellation that reaches them while they connect (psycopg_pool keeps them alive), so the loop
        would wait for them forever; closing the pool stops them."""
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            if self.pool is pool:
                self.pool = None
            idle = list(getattr(pool, "_pool", ()))  # the idle connections (psycopg_pool keeps them there)
            try:
                await pool.close(timeout=1.0)
            except BaseException:  # its workers were cancelled too (the loop ends): it stops early
                pass
            for conn in idle:
                if not conn.closed:
                    conn.pgconn.finish()

    async def fetch_value(self, statement: str, params: Sequence[Any], timeout: float | None = None) -> Any:
        """The first column of `statement`'s first row (None without rows), within `timeout` seconds."""
        global prepared_statements
        try:
            return await self._fetch_value(statement, params, timeout, _prepare_threshold())
        except _NotPreparedHere:
            pass
        if prepared_statements:
            prepared_statements = False
            logger.warning(
                "the database session lost a prepared statement (a connection pooler in transaction mode without "
                "prepared statement support?): the data plane's statements are sent unprepared from now on"
            )
        return await self._fetch_value(statement, params, timeout, None)

    async def _fetch_value(self, statement: str, params: Sequence[Any], timeout: float | None, threshold) -> Any:
        # Shielded: a caller cancelled while its statement runs must not cancel psycopg's wait, whose handler
        # sends the server a cancel request synchronously (libpq's PQcancel: a blocking connect, which stalls
        # the event loop on an unreachable network). The statement ends by itself or at its deadline.
        return await asyncio.shield(asyncio.ensure_future(self._run(statement, params, timeout, threshold)))

    async def _run(self, statement: str, params: Sequence[Any], timeout: float | None, threshold) -> Any:
        loop = asyncio.get_running_loop()
        pool = await self._ready()
        started = loop.time()
        try:
            conn = await pool.getconn(timeout=timeout or None)
        except PoolTimeout:
            # Its connection attempts may be stuck (a black-holed network) or backing off: the next call starts
            # a new pool, whose first attempt is at once, so the database coming back is noticed by that call.
            self._discard(pool)
            raise django_db.OperationalError(
                f"the database did not answer within {timeout or pool.timeout:g} s (connecting)"
            ) from None
        expired: list[bool] = []
        timer = None
        if timeout:

            def expire() -> None:
                expired.append(True)
                _shut_down(conn)

            timer = loop.call_later(max(timeout - (loop.time() - started), 0.001), expire)
        try:
            conn.prepare_threshold = threshold
            cursor = await conn.execute(statement, params)
            row = await cursor.fetchone()
        except psycopg.Error as error:
            if expired:
                raise django_db.OperationalError(f"the database did not answer within {timeout:g} s") from None
            if threshold is not None and error.sqlstate in _NOT_PREPARED_HERE:
                raise _NotPreparedHere from error
            raise django_error(error) from None
        finally:
            if timer is not None:
                timer.cancel()
            await pool.putconn(conn)
        return None if row is None else row[0]

    def _discard(self, pool: AsyncConnectionPool) -> None:
        """Stop using `pool`; it is closed in the background (by its closer task)."""
        if self.pool is pool:
            self.pool = None
            closer, self._closer = self._closer, None
            if closer is not None:
                closer.cancel()

    def connections_open(self) -> int:
        return 0 if self.pool is None or self.pool.closed else self.pool.get_stats().get("pool_size", 0)

    def discard(self) -> None:
        """Close the idle connections of a pool whose event loop is closed (its own tasks are gone)."""
        pool, self.pool = self.pool, None
        for conn in list(getattr(pool, "_pool", ())):  # the idle connections (psycopg_pool keeps them there)
            conn.pgconn.finish()

    async def close(self) -> None:
        pool, self.pool = self.pool, None
        closer, self._closer = self._closer, None
        if closer is not None:
            closer.cancel()
        if pool is not None:
            await pool.close(timeout=1.0)


async def _configure(conn: psycopg.AsyncConnection) -> None:
    conn.prepare_threshold = _prepare_threshold()


# One pool per event loop; the pools of loops that closed are dropped (their idle connections closed) when
# another loop opens one.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DataPlanePool] = weakref.WeakKeyDictionary()
_pools_lock = threading.Lock()
_pid = os.getpid()


def client() -> DataPlanePool:
    """The running event loop's pool."""
    global _pid
    loop = asyncio.get_running_loop()
    found = _pools.get(loop)
    if found is not None:
        return found
    with _pools_lock:
        if _pid != os.getpid():  # forked: the parent's connections are not ours to use or close
            _pools.clear()
            _pid = os.getpid()
        for other in [other for other in _pools if other.is_closed()]:
            _pools.pop(other).discard()
        found = _pools[loop] = DataPlanePool()
    return found


async def fetch_value(statement: str, params: Sequence[Any], timeout: float | None = None) -> Any:
    """`DataPlanePool.fetch_value` on the running event loop's pool."""
    return await client().fetch_value(statement, params, timeout)


def open_connections() -> int:
    """Connections held by this process's pools."""
    return sum(each.connections_open() for each in list(_pools.values()))


def close_all(timeout: float = 5.0) -> None:
    """Close every pool (process or test-session end); callable from any thread, not from a pool's own loop
    (there: `await client().close()`)."""
    with _pools_lock:
        pools = list(_pools.items())
        _pools.clear()
    for loop, each in pools:
        if loop.is_closed() or not loop.is_running():
            each.discard()  # its tasks are gone
            continue
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            running.create_task(each.close())
            continue
        try:
            asyncio.run_coroutine_threadsafe(each.close(), loop).result(timeout)
        except Exception:  # closed meanwhile, or too slow
            logger.warning("a data plane PostgreSQL pool was not closed within %g s", timeout)
