"""The data plane's per-request PostgreSQL statements on the event loop: psycopg's async connection, psycopg_pool.

Handing a statement to the data plane's database thread (gateway_project/db_thread.py) costs more CPU than
the statement itself (the executor hand-off, the GIL passing between the loop and the thread, two wake-ups on
the worker's one core: about 130-150 us per hold, docs/performance.md). The budget hold and the settlement
(budgets/counter_sql.py) are therefore sent from the event loop, on psycopg `AsyncConnection`s opened by a
`psycopg_pool.AsyncNullConnectionPool` of the loop (`GATEWAY_DB_LOOP_CONNECTIONS` connections, default 1, opened
when a statement needs one, with the parameters of Django's connection: the test database, `connect_timeout`,
keepalives, the server-side `statement_timeout` / `lock_timeout` of gateway_project/db_options.py; autocommit,
no check and no reset). The algorithm on top, what makes the library's per-statement costs affordable:

- a connection is taken out of the pool once and kept (parked) while it works, not taken and returned per
  statement; a connection the server closed while it was parked is noticed before it is used and closed, so
  the statement goes out on another (gateway_project/loop_pg_connections.py);
- a connection is opened when statements wait for one, by an attempt made for them, now, that ends with them
  (their deadlines): statements arriving during an attempt get one of their own after it, so once the
  database is back after an outage the next statement connects at once (no reconnection schedule: psycopg's
  `AsyncConnectionPool` tried 1, 2, 4 ... s apart, and holds failed for seconds after the database was back);
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
the statement). Errors come out as Django's database exceptions (`django_error`, gateway_project/loop_pg_errors.py:
`OperationalError` for a lost or unreachable server, a statement or lock timeout), so the data plane's 503 mapping
(gateway_project/api/errors.py) is unchanged. A statement without a result within `timeout` fails with
`OperationalError` (one timer per loop checks the deadlines, not one per statement:
gateway_project/loop_pg_deadlines.py): its connection's socket is shut down (psycopg's wait then fails at once,
no cancellation that could stall the loop), every statement on that connection fails, the connection is closed,
and the next call opens a new one. Nothing is cancelled in psycopg on the
deadline, so no task shields a statement: a caller that is cancelled while its statement runs (its own task
cancelled) leaves psycopg's cancellation (`cancel_safe`, non-blocking with the libpq >= 17 psycopg-binary
bundles) to stop it.

Here: the statements (`LoopDatabase`, run alone or queued and batched), the prepared statements' fallback
(`prepared_statements`, read on this module), and one database per event loop (`database()`,
`open_connections()`, `close_all()`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from django import db as django_db

from gateway_project.db_deadline import deadline_seconds, shut_down_socket
from gateway_project.loop_pg_connections import LoopConnections, connection_params
from gateway_project.loop_pg_deadlines import Deadline, Deadlines
from gateway_project.loop_pg_errors import django_error, statement_error

__all__ = ["LoopDatabase", "close_all", "connection_params", "database", "django_error", "open_connections"]

logger = logging.getLogger("gateway.loop_pg")

_MAX_BATCH = 64  # statements sent in one pipeline
_BAD = psycopg.pq.ConnStatus.BAD

# False once a pooler showed that this process's sessions cannot keep prepared statements (see the module doc).
# Read here by every statement (tests and bench/hold_path.py set it on this module).
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


class Statement:
    __slots__ = ("conn", "future", "params", "prepare", "query", "seq")

    def __init__(self, query, params, prepare: bool, future: asyncio.Future, seq: int) -> None:
        self.query = query
        self.params = params
        self.prepare = prepare
        self.future = future
        self.seq = seq  # its place in the queue's order (a connection attempt is made for the statements before it)
        self.conn: psycopg.AsyncConnection | None = None  # the connection it was sent on


class LoopDatabase(LoopConnections):
    """The event loop's pool (gateway_project/loop_pg_connections.py) and the statements sent over it:
    `query(statement, params)` returns the rows."""

    def __init__(self, params: Callable[[], dict[str, Any]] = connection_params, size: int | None = None) -> None:
        super().__init__(params, size)
        self.deadlines = Deadlines()  # of the statements waiting for their result, and the one timer checking them
        self.queue: collections.deque[Statement] = collections.deque()
        self.enqueued = 0  # statements queued so far (the next one's `seq`)

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
        if self.closed:
            raise django_db.OperationalError("the database connections were closed")
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self._pool()
        statement = Statement(query, params, prepare, loop.create_future(), self.enqueued)
        self.enqueued += 1
        self.queue.append(statement)
        conn = self._unpark()
        if conn is not None:
            self.loop.create_task(self._drain(conn))
        else:
            self._start_drain()
        deadline = None
        if timeout:
            deadline = Deadline(loop.time() + timeout, timeout, statement=statement)
            self.deadlines.arm(deadline, self.loop)
        try:
            return await statement.future
        finally:
            if deadline is not None:
                self.deadlines.discard(deadline)
            if self.connecting:  # one waits for a connection: is it still wanted?
                self._abandon_attempts()

    async def _run_alone(self, conn, query, params, prepare: bool, timeout: float | None) -> list[tuple]:
        deadline = None
        if timeout:
            deadline = Deadline(self.loop.time() + timeout, timeout, conn=conn)
            self.deadlines.arm(deadline, self.loop)
        try:
            return await self._execute(conn, query, params, prepare)
        except psycopg.Error as error:
            if deadline is not None and deadline.expired:
                raise django_db.OperationalError(f"the database did not answer within {timeout:g} s") from None
            raise statement_error(error, conn) from None
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
        batch: list[Statement] = []
        try:
            if conn is None:
                conn = await self._connect()
                if conn is None:
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
                shut_down_socket(conn.pgconn)
            self._fail(batch, django_db.OperationalError(f"the database statement was abandoned: {error!r}"))
            raise
        finally:
            if conn is not None:
                self._park(conn)

    async def _connect(self) -> psycopg.AsyncConnection | None:
        """A new connection for the queued statements, counted in `held` (`_start_drain`); None (`held` given
        back) when none could be opened for them. An attempt that fails fails the statements it was made for
        (queued before it started); those queued meanwhile get an attempt of their own, at once: an attempt
        made while the database was unreachable fails (or is abandoned) after the database may be back, and
        must not fail them, nor make them wait for the next one."""
        try:
            while not self.closed:
                first = self.enqueued
                try:
                    return await self._take(deadline_seconds(), first)
                except django_db.Error as error:
                    self._fail_queued(error, first)
                queue = self.queue
                while queue and queue[0].future.done():
                    queue.popleft()
                if not queue:
                    break
        except BaseException:
            self.held -= 1
            raise
        self.held -= 1
        return None

    async def _run_batch(self, conn, batch: list[Statement]) -> None:
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
                    self._fail(batch, statement_error(error, conn))
                    return
                if not statement.future.done():
                    statement.future.set_exception(statement_error(error, conn))
            else:
                if not statement.future.done():
                    statement.future.set_result(rows)

    @staticmethod
    def _fail(batch: list[Statement], error: Exception) -> None:
        """The statements of `batch` still waiting fail with `error` (their connection broke)."""
        for statement in batch:
            if not statement.future.done():
                statement.future.set_exception(error)

    def _fail_queued(self, error: Exception, before: int | None = None) -> None:
        """The queued statements fail with `error`: all of them, or those queued before `before` (their `seq`)."""
        queue = self.queue
        while queue and (before is None or queue[0].seq < before):
            statement = queue.popleft()
            if not statement.future.done():
                statement.future.set_exception(error)

    async def aclose(self) -> None:
        self.close()
        self._end_attempts()
        if self.pool is not None:
            await self.pool.close()

    def close(self) -> None:
        """Close the parked connections; the pool is closed by `aclose` (on its loop). For good: no statement
        runs and no connection is opened any more (a connection being opened is closed when it arrives)."""
        self.closed = True
        self._finish_parked()
        self.deadlines.cancel()
        self._fail_queued(django_db.OperationalError("the connection was closed"))


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
            each._end_attempts()
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
