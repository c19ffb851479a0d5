"""The data plane's per-request PostgreSQL statements on the event loop: psycopg's async connection, psycopg_pool.

Handing a statement to the data plane's database thread (gateway_project/db_thread.py) costs more CPU than
the statement itself (the executor hand-off, the GIL passing between the loop and the thread, two wake-ups on
the worker's one core: about 130-150 us per hold, docs/performance.md). The budget hold and the settlement
(budgets/counter_sql.py) are therefore sent from the event loop, on psycopg `AsyncConnection`s taken from a
`psycopg_pool.AsyncConnectionPool` of the loop (`GATEWAY_DB_LOOP_CONNECTIONS` connections, default 1, opened
on first use with the parameters of Django's connection: the test database, `connect_timeout`, keepalives, the
server-side `statement_timeout` / `lock_timeout` of gateway_project/db_options.py; autocommit, no check and no
reset on return). The algorithm on top, what makes the library's per-statement costs affordable:

- a connection is taken out of the pool once and kept (parked) while it works, not taken and returned per
  statement (`getconn`/`putconn` and their checks cost about 40 us per statement); a connection the server
  closed while it was parked (a restart, `pg_terminate_backend`) is noticed before it is used (its socket is
  readable: one `select` without waiting) and returned to the pool, which replaces it, so the statement goes
  out on another;
- a statement that finds a parked connection and nothing queued runs at once, in its caller's task: psycopg
  writes it before the caller first yields (the hold is sent ahead, budgets/middleware.py, and travels while
  the request goes on), no task, no future;
- statements arriving while every connection is busy are queued and sent together by the connection that
  frees up, group-commit style: one psycopg pipeline (`conn.pipeline()`), one sync, one round trip for the
  batch. The batch's statements run in one implicit transaction (autocommit, one sync): when one fails, none
  was applied, and each is run again on its own, so a failing statement fails only its caller;
- the hold and the settlement are prepared statements (`prepare=True`: psycopg prepares them on the
  connection's first use, the database parses and plans them once per connection). Behind a pooler that cannot
  keep a session's prepared statements (PgBouncer before 1.21 in transaction mode, or without
  `max_prepared_statements`) the database answers that the statement does not exist (or exists already): it was
  not run, so it is sent again unprepared, and the process stops preparing (one warning in the log).

Parameters are bound by psycopg's adapters (Python lists for arrays, uuid, aware datetimes; JSON as text cast by
the statement). Errors come out as Django's database exceptions (`django_error`: `OperationalError` for a lost
or unreachable server, a statement or lock timeout), so the data plane's 503 mapping
(gateway_project/api/errors.py) is unchanged. A statement without a result within `timeout` fails with
`OperationalError` (one timer per loop checks the deadlines, not one per statement): its connection's socket
is shut down (psycopg's wait then fails at once, no cancellation
that could stall the loop), every statement on that connection fails, the connection goes back to the pool,
which replaces it, and the next call takes a new one. Nothing is cancelled in psycopg on the deadline, so no
task shields a statement: a caller that is cancelled while its statement runs (its own task cancelled) leaves
psycopg's cancellation (`cancel_safe`, non-blocking with the libpq >= 17 psycopg-binary bundles) to stop it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import select
import threading
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from django import db as django_db
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from gateway_project.db_deadline import shut_down_socket

logger = logging.getLogger("gateway.loop_pg")

_APPLICATION_NAME = "gateway-data-plane"
_MAX_BATCH = 64  # statements sent in one pipeline
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
_BAD = psycopg.pq.ConnStatus.BAD


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


def _not_prepared_here(error: psycopg.Error) -> bool:
    return error.sqlstate in ("26000", "42P05")


def _lost_prepared_statements() -> None:
    global prepared_statements
    if prepared_statements:
        prepared_statements = False
        logger.warning(
            "the database session lost a prepared statement (a connection pooler in transaction mode without "
            "prepared statement support?): the data plane's statements are sent unprepared from now on"
        )


def _shut_down(conn: psycopg.AsyncConnection) -> None:
    """Shut the connection's socket down: a psycopg wait on it fails at once (the deadline)."""
    shut_down_socket(conn.pgconn)


class _Statement:
    __slots__ = ("conn", "future", "params", "prepare", "query")

    def __init__(self, query, params, prepare: bool, future: asyncio.Future) -> None:
        self.query = query
        self.params = params
        self.prepare = prepare
        self.future = future
        self.conn: psycopg.AsyncConnection | None = None  # the connection it was sent on


class _Deadline:
    """When a statement must have its result: past it, a queued statement fails, a sent one's connection is shut
    down. Checked by one timer of the loop's database (`LoopDatabase._watch`), not a timer per statement."""

    __slots__ = ("at", "conn", "expired", "statement", "timeout")

    def __init__(self, at: float, timeout: float, conn=None, statement: _Statement | None = None) -> None:
        self.at = at
        self.timeout = timeout
        self.conn = conn  # a statement run in its caller's task: the connection it runs on
        self.statement = statement  # a queued statement (sent later, on `statement.conn`)
        self.expired = False

    def expire(self) -> None:
        self.expired = True
        statement = self.statement
        if statement is None:
            _shut_down(self.conn)
            return
        if not statement.future.done():
            error = django_db.OperationalError(f"the database did not answer within {self.timeout:g} s")
            statement.future.set_exception(error)
            if statement.conn is not None:  # sent: whatever the connection answers next is not for a statement now
                _shut_down(statement.conn)


class LoopDatabase:
    """The event loop's pool and the statements sent over it: `query(statement, params)` returns the rows."""

    def __init__(self, params: Callable[[], dict[str, Any]] = connection_params, size: int | None = None) -> None:
        self.params = params
        self.size = max(1, int(size or getattr(settings, "GATEWAY_DB_LOOP_CONNECTIONS", 1)))
        self.pool: AsyncConnectionPool | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.parked: list[psycopg.AsyncConnection] = []  # taken from the pool, idle
        self.deadlines: set[_Deadline] = set()  # of the statements waiting for their result
        self.cursors: dict[psycopg.AsyncConnection, psycopg.AsyncCursor] = {}  # one per connection taken
        self.watch: asyncio.TimerHandle | None = None  # the one timer checking them
        self.held = 0  # connections taken from the pool (parked, running a statement, or being taken)
        self.queue: collections.deque[_Statement] = collections.deque()
        self.closed = False

    # The pool and the connections taken from it

    def _pool(self) -> AsyncConnectionPool:
        pool = self.pool
        if pool is None:
            pool = self.pool = AsyncConnectionPool(
                "",
                kwargs={**self.params(), "autocommit": True},
                min_size=self.size,
                max_size=self.size,
                open=False,
                check=None,
                reset=None,
                name=_APPLICATION_NAME,
            )
            self.loop = asyncio.get_running_loop()
        return pool

    async def _take(self, timeout: float | None) -> psycopg.AsyncConnection:
        """A connection out of the pool (opened on first use); counted in `held` by the caller."""
        pool = self._pool()
        try:
            if pool.closed:
                await pool.open(wait=False)
            return await pool.getconn(timeout=timeout or None)
        except PoolTimeout:
            raise django_db.OperationalError(
                f"the database did not answer within {timeout:g} s (connecting)"
                if timeout
                else "could not connect to the database"
            ) from None
        except psycopg.Error as error:
            raise django_error(error) from None

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
        again per statement); such a connection goes back to the pool, which replaces it."""
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

    def _arm(self, deadline: _Deadline) -> None:
        self.deadlines.add(deadline)
        watch = self.watch
        if watch is None or deadline.at < watch.when():
            if watch is not None:
                watch.cancel()
            self.watch = self.loop.call_at(deadline.at, self._watch)

    def _watch(self) -> None:
        self.watch = None
        now = self.loop.time()
        for deadline in [d for d in self.deadlines if d.at <= now]:
            self.deadlines.discard(deadline)
            deadline.expire()
        if self.deadlines:
            self.watch = self.loop.call_at(min(d.at for d in self.deadlines), self._watch)

    def _give_back(self, conn: psycopg.AsyncConnection) -> None:
        """Return a connection to the pool (a broken one is replaced by it)."""
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

    # Statements

    async def query(self, query, params=None, timeout: float | None = None, prepare: bool = False) -> list[tuple]:
        """Run `query` (psycopg placeholders) with `params` bound; its rows. `prepare`: a prepared statement of
        the connection (see the module doc). Fails with `OperationalError` when no result comes within
        `timeout` seconds."""
        prepare = prepare and prepared_statements
        if self.parked and not self.queue:
            conn = self._unpark()
            if conn is not None:
                try:
                    return await self._run_alone(conn, query, params, prepare, timeout)
                finally:
                    self._park(conn)
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self._pool()
        statement = _Statement(query, params, prepare, loop.create_future())
        self.queue.append(statement)
        conn = self._unpark()
        if conn is not None:
            self.loop.create_task(self._drain(conn))
        else:
            self._start_drain()
        if not timeout:
            return await statement.future
        deadline = _Deadline(loop.time() + timeout, timeout, statement=statement)
        self._arm(deadline)
        try:
            return await statement.future
        finally:
            self.deadlines.discard(deadline)

    async def _run_alone(self, conn, query, params, prepare: bool, timeout: float | None) -> list[tuple]:
        deadline = None
        if timeout:
            deadline = _Deadline(self.loop.time() + timeout, timeout, conn=conn)
            self._arm(deadline)
        try:
            return await self._execute(conn, query, params, prepare)
        except psycopg.Error as error:
            if deadline is not None and deadline.expired:
                raise django_db.OperationalError(f"the database did not answer within {timeout:g} s") from None
            raise _django_error(error, conn) from None
        finally:
            if deadline is not None:
                self.deadlines.discard(deadline)

    async def _execute(self, conn, query, params, prepare: bool) -> list[tuple]:
        cursor = self.cursors.get(conn)  # one cursor per connection, reused: creating one per statement costs more
        if cursor is None:
            cursor = self.cursors[conn] = conn.cursor()
        try:
            await cursor.execute(query, params, prepare=prepare)
        except psycopg.Error as error:
            if not (prepare and _not_prepared_here(error)):
                raise
            _lost_prepared_statements()
            await cursor.execute(query, params, prepare=False)  # it was not run
        return await cursor.fetchall() if cursor.pgresult.status == psycopg.pq.ExecStatus.TUPLES_OK else []

    async def _drain(self, conn: psycopg.AsyncConnection | None) -> None:
        """Run the queued statements on `conn` (None: one taken from the pool first), in batches."""
        batch: list[_Statement] = []
        try:
            if conn is None:
                try:
                    conn = await self._take(_deadline_seconds())
                except django_db.Error as error:
                    self.held -= 1
                    self._fail_queued(error)
                    return
            while self.queue and not self.closed and conn.pgconn.status != _BAD:
                batch = []
                while self.queue and len(batch) < _MAX_BATCH:
                    statement = self.queue.popleft()
                    if not statement.future.done():  # else its caller gave up
                        statement.conn = conn
                        batch.append(statement)
                if batch:
                    await self._run_batch(conn, batch)
        except BaseException as error:  # cancelled (the loop closing): nobody may wait forever
            if conn is not None:
                _shut_down(conn)
            self._fail(batch, django_db.OperationalError(f"the database statement was abandoned: {error!r}"))
            raise
        finally:
            if conn is not None:
                self._park(conn)

    async def _run_batch(self, conn, batch: list[_Statement]) -> None:
        if len(batch) > 1:
            cursors = []
            try:
                async with conn.pipeline():
                    for statement in batch:
                        cursor = conn.cursor()
                        cursors.append(cursor)
                        await cursor.execute(statement.query, statement.params, prepare=statement.prepare)
                results = [
                    await c.fetchall() if c.pgresult.status == psycopg.pq.ExecStatus.TUPLES_OK else [] for c in cursors
                ]
            except psycopg.Error:
                if conn.pgconn.status == _BAD:
                    self._fail(batch, django_db.OperationalError("the database closed the connection"))
                    return
                # One statement failed: the batch was one implicit transaction, nothing was applied. Each runs on
                # its own, so only the failing one fails.
            else:
                for statement, rows in zip(batch, results, strict=True):
                    if not statement.future.done():
                        statement.future.set_result(rows)
                return
        for statement in batch:
            if statement.future.done():
                continue
            try:
                rows = await self._execute(conn, statement.query, statement.params, statement.prepare)
            except psycopg.Error as error:
                if conn.pgconn.status == _BAD:
                    self._fail(batch, _django_error(error, conn))
                    return
                if not statement.future.done():
                    statement.future.set_exception(_django_error(error, conn))
            else:
                if not statement.future.done():
                    statement.future.set_result(rows)

    @staticmethod
    def _fail(batch: list[_Statement], error: Exception) -> None:
        """The statements of `batch` still waiting fail with `error` (their connection broke)."""
        for statement in batch:
            if not statement.future.done():
                statement.future.set_exception(error)

    def _fail_queued(self, error: Exception) -> None:
        queued, self.queue = self.queue, collections.deque()
        for statement in queued:
            if not statement.future.done():
                statement.future.set_exception(error)

    def connections_open(self) -> int:
        return self.held

    async def aclose(self) -> None:
        self.close()
        if self.pool is not None:
            await self.pool.close()

    def close(self) -> None:
        """Close the parked connections; the pool is closed by `aclose` (on its loop)."""
        self.closed = True
        while self.parked:
            conn = self.parked.pop()
            self.held -= 1
            conn.pgconn.finish()
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        self._fail_queued(django_db.OperationalError("the connection was closed"))
        if self.pool is not None and (self.loop is None or self.loop.is_closed() or not self.loop.is_running()):
            # The pool's own idle connections (one it opened to replace a broken one): its loop cannot close them.
            for conn in list(getattr(self.pool, "_pool", ())):
                conn.pgconn.finish()


def _deadline_seconds() -> float | None:
    from gateway_project.db_deadline import deadline_seconds

    return deadline_seconds()


def _django_error(error: psycopg.Error, conn) -> django_db.Error:
    wrapped = django_error(error)
    if conn.pgconn.status == _BAD and not isinstance(wrapped, django_db.OperationalError):
        wrapped = django_db.OperationalError(str(error))
        wrapped.__cause__ = error
    return wrapped


# One pool per event loop (asyncio futures and readers belong to one loop); the pools of loops that closed are
# dropped (their parked connections closed) when another loop opens one.
_databases: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopDatabase] = weakref.WeakKeyDictionary()
_databases_lock = threading.Lock()
_pid = os.getpid()


def database() -> LoopDatabase:
    """The running event loop's pool."""
    global _pid
    loop = asyncio.get_running_loop()
    found = _databases.get(loop)
    if found is not None:
        return found
    with _databases_lock:
        if _pid != os.getpid():  # forked: the parent's connections are not ours to use or close
            _databases.clear()
            _pid = os.getpid()
        for other, other_database in list(_databases.items()):
            if other.is_closed():
                other_database.close()
                del _databases[other]
        found = _databases[loop] = LoopDatabase()
    return found


def open_connections() -> int:
    """Connections taken from this process's pools (one pool per event loop that used one)."""
    return sum(d.connections_open() for d in list(_databases.values()))


def close_all(timeout: float = 5.0) -> None:
    """Close every loop's pool (process or test-session end); callable from any thread."""
    with _databases_lock:
        databases = list(_databases.items())
        _databases.clear()
    for loop, each in databases:
        if loop.is_closed() or not loop.is_running():
            each.close()
            continue
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            each.close()
            if each.pool is not None:
                loop.create_task(each.pool.close())
            continue
        try:
            future = asyncio.run_coroutine_threadsafe(each.aclose(), loop)
        except RuntimeError:  # closed meanwhile
            each.close()
            continue
        try:
            future.result(timeout)
        except Exception:
            logger.warning("a data plane PostgreSQL pool was not closed within %g s", timeout)
