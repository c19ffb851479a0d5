"""A lean PostgreSQL client on the event loop, for the data plane's per-request statements (the budget hold).

Handing a statement to the data plane's database thread (gateway_project/db_thread.py) costs more CPU than
the statement itself: the executor hand-off, the GIL passing between the loop and the thread, and two wake-ups
on the one core a worker runs on (about 130-150 us per hold, docs/performance.md). This client sends the
statement from the event loop instead, on a non-blocking libpq connection (psycopg's `psycopg.pq` wrapper)
watched with `loop.add_reader`, in the spirit of gateway_project/fast_redis.py:

- one connection per event loop, opened on first use with the same parameters as Django's (the test database,
  `connect_timeout`, keepalives, the server-side `statement_timeout` / `lock_timeout` of
  gateway_project/db_options.py), in autocommit;
- pipeline mode: each statement is sent with `PQsendQueryParams` (the unnamed statement: no server-side
  prepared statement, no session state, so pgbouncer's transaction mode works) followed by its own sync, so a
  failing statement cannot abort another; libpq writes each statement to the socket as its sync is queued
  (`PQpipelineSync` flushes; what the socket's buffer could not take is written when it drains, and the end of
  the loop's turn tries again), so a statement leaves before its caller yields; results are matched to callers
  in order;
- parameters and results as text (callers format them; the types come from the statement);
- `query(..., prepared=True)` (the hold and the settlement): a named server-side prepared statement, prepared on
  the connection's first use of it in the same pipeline as its first execution, then only bound and executed
  (the database parses and plans it once per connection: 25-40 us less per statement, docs/performance.md).
  Its name is derived from its text, so two texts never share a name. Behind a pooler that cannot keep a
  session's prepared statements (PgBouncer before 1.21 in transaction mode, or without
  `max_prepared_statements`), the database answers that the statement does not exist (or exists already): the
  statement was not run, so it is sent again unprepared, and the client stops preparing statements for the
  rest of the process (one warning in the log).

Errors come out as Django's database exceptions (`django.db.OperationalError` for a lost or unreachable
server, a statement or lock timeout; the class matching psycopg's otherwise), so the data plane's 503 mapping
(gateway_project/api/errors.py) is unchanged. A statement that gets no result within `timeout` fails with
OperationalError and closes the connection (the results still due would otherwise answer the wrong callers);
every statement waiting on a connection that breaks fails with OperationalError, and the next call opens a
new connection. A connection the server closes while idle is noticed at once (its socket turns readable).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from django import db as django_db
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import pq

logger = logging.getLogger("gateway.fast_pg")

_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_COMMAND_OK = pq.ExecStatus.COMMAND_OK
_PIPELINE_SYNC = pq.ExecStatus.PIPELINE_SYNC
_FATAL_ERROR = pq.ExecStatus.FATAL_ERROR
_PIPELINE_ABORTED = pq.ExecStatus.PIPELINE_ABORTED
_BAD = pq.ConnStatus.BAD
_SEVERITY = pq.DiagnosticField.SEVERITY_NONLOCALIZED
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


def django_error(error: psycopg.Error) -> django_db.Error:
    """Django's exception for a psycopg one (as `DatabaseWrapper.wrap_database_errors` maps them)."""
    for django_class in _DJANGO_ERRORS:
        if isinstance(error, getattr(psycopg, django_class.__name__)):
            wrapped = django_class(*error.args)
            wrapped.__cause__ = error
            return wrapped
    return django_db.Error(str(error))  # pragma: no cover - every psycopg error is a psycopg.Error


def connection_params(alias: str = DEFAULT_DB_ALIAS) -> dict[str, Any]:
    """libpq parameters of Django's connection `alias` (read when a connection opens: tests rename the db)."""
    params = dict(connections[alias].get_connection_params())
    for name in _NOT_LIBPQ:
        params.pop(name, None)
    params.setdefault("application_name", _APPLICATION_NAME)
    return {name: value for name, value in params.items() if value is not None}


class _Connection:
    """One non-blocking libpq connection in pipeline mode, its socket watched by the loop."""

    __slots__ = (
        "client",
        "closed",
        "conn",
        "fd",
        "flush_scheduled",
        "loop",
        "pending",
        "pgconn",
        "prepared",
        "results",
        "writing",
    )

    def __init__(self, client: FastPG, conn: psycopg.AsyncConnection, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.conn = conn  # keeps psycopg's wrapper (and its PGconn) alive; only its pgconn is used
        self.pgconn = conn.pgconn
        self.loop = loop
        # (the caller's future, the name of the statement prepared with it or None), in the order sent.
        self.pending: collections.deque[tuple[asyncio.Future, bytes | None]] = collections.deque()
        self.prepared: set[bytes] = set()  # names of the statements this session has prepared
        self.results: list[pq.abc.PGresult] = []
        self.flush_scheduled = False
        self.writing = False
        self.closed = False
        self.pgconn.notice_handler = _ignore_notice
        self.pgconn.nonblocking = 1
        self.pgconn.enter_pipeline_mode()
        self.fd = self.pgconn.socket
        loop.add_reader(self.fd, self._readable)

    def send(self, statement: bytes, params: list[bytes | None], name: bytes | None = None) -> asyncio.Future:
        """Queue `statement` (the named prepared statement `name` when given) and its sync; its result's future."""
        future = self.loop.create_future()
        preparing = None
        pgconn = self.pgconn
        try:
            if name is None:
                pgconn.send_query_params(statement, params)
            else:
                if name not in self.prepared:
                    pgconn.send_prepare(name, statement)
                    self.prepared.add(name)
                    preparing = name
                pgconn.send_query_prepared(name, params)
            pgconn.pipeline_sync()
        except psycopg.Error as error:
            self.broken(django_error(error))
            raise django_error(error) from None
        self.pending.append((future, preparing))
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        self.flush_scheduled = False
        if self.closed:
            return
        try:
            unsent = self.pgconn.flush()
        except psycopg.Error as error:
            self.broken(django_error(error))
            return
        if unsent and not self.writing:  # the socket's buffer is full: finish when it drains
            self.writing = True
            self.loop.add_writer(self.fd, self._writable)

    def _writable(self) -> None:
        try:
            unsent = self.pgconn.flush()
        except psycopg.Error as error:
            self.broken(django_error(error))
            return
        if not unsent:
            self.writing = False
            self.loop.remove_writer(self.fd)

    def _readable(self) -> None:
        pgconn = self.pgconn
        try:
            pgconn.consume_input()
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    if not self.results:
                        break  # nothing more has arrived
                    if len(self.results) == 1 and self.pending and self.pending[0][1] is not None:
                        continue  # a PREPARE's result: its execution's result follows (one sync for both)
                    self._answer(self.results)
                    self.results = []
                elif result.status != _PIPELINE_SYNC:
                    self.results.append(result)
        except psycopg.Error as error:
            self.broken(django_error(error))
            return
        if pgconn.status == _BAD:
            self.broken(django_db.OperationalError("the database closed the connection"))

    def _answer(self, results: list) -> None:
        if not self.pending:
            # A result nobody waits for (an error the server sent before closing an idle connection).
            error = _result_error(results[-1], self.pgconn)
            self.broken(error or django_db.OperationalError("unexpected result from the database"))
            return
        future, preparing = self.pending.popleft()
        result = results[-1]
        error = None
        for each in results:  # a failed PREPARE aborts its execution: the PREPARE's error is the one to report
            error = _result_error(each, self.pgconn)
            if error is not None:
                result = each
                break
        if preparing is not None and result is results[0] and error is not None:
            self.prepared.discard(preparing)  # the PREPARE failed: the next use prepares it again
        if not future.done():  # else its caller gave up (cancelled, or past its deadline)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
        if error is not None and result.error_field(_SEVERITY) in (b"FATAL", b"PANIC"):
            # The server ends the session after a fatal error (pg_terminate_backend, a shutdown): the statements
            # still waiting fail now, and the next call opens a new connection.
            self.broken(django_db.OperationalError(f"the database ended the connection: {error}"))

    def broken(self, error: Exception) -> None:
        """Close this connection; every statement waiting on it fails with `error`."""
        if self.closed:
            return
        self.closed = True
        if self.client._connection is self:
            self.client._connection = None
        pending, self.pending = self.pending, collections.deque()
        for future, _ in pending:
            if not future.done():
                future.set_exception(error)
        self.close()

    def close(self) -> None:
        self.closed = True
        if not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
            if self.writing:
                self.loop.remove_writer(self.fd)
        self.pgconn.finish()


def _ignore_notice(result) -> None:
    pass


def _result_error(result, pgconn) -> django_db.Error | None:
    status = result.status
    if status in (_TUPLES_OK, _COMMAND_OK):
        return None
    if status == _PIPELINE_ABORTED:  # not expected: every statement has its own sync
        return django_db.OperationalError("the statement was not run: an earlier one in its pipeline failed")
    error = django_error(psycopg.errors.error_from_result(result, encoding="utf-8"))
    if pgconn.status == _BAD and not isinstance(error, django_db.OperationalError):
        error = django_db.OperationalError(str(error))
    return error


def statement_name(statement: bytes) -> bytes:
    """The prepared statement name of `statement`: derived from its text (no two texts share a name)."""
    name = _names.get(statement)
    if name is None:
        name = _names[statement] = b"gateway_" + hashlib.sha256(statement).hexdigest()[:24].encode()
    return name


_names: dict[bytes, bytes] = {}
# False once a pooler showed that this process's sessions cannot keep prepared statements (see the module doc).
prepared_statements = True


def _not_prepared_here(error: Exception) -> bool:
    cause = error.__cause__
    return isinstance(cause, psycopg.Error) and cause.sqlstate in ("26000", "42P05")


class FastPG:
    """One connection per event loop, opened on first use; `query(statement, params)` returns its PGresult."""

    def __init__(self, params: Callable[[], dict[str, Any]] = connection_params) -> None:
        self.params = params
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future | None = None

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        try:
            conn = await psycopg.AsyncConnection.connect(autocommit=True, **self.params())
        except psycopg.Error as error:
            raise django_error(error) from None
        try:
            connection = _Connection(self, conn, loop)
        except BaseException:
            conn.pgconn.finish()
            raise
        return connection

    async def _ready(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        connecting = self._connecting
        if connecting is not None and connecting.done():
            # An attempt whose every waiter gave up (the caller's deadline) and which ended later: a failure is
            # not this call's answer (the database may be back), a connection it opened is used if still open.
            self._connecting = None
            if not connecting.cancelled() and connecting.exception() is None:
                opened = connecting.result()
                if not opened.closed and (self._connection is None or self._connection.closed):
                    self._connection = opened
                    return opened
                if opened is not self._connection:
                    opened.close()
            connecting = None
        if connecting is None:
            connecting = self._connecting = asyncio.ensure_future(self._connect(loop))
        try:
            connection = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        if self._connection is None or self._connection.closed:
            self._connection = connection
        elif self._connection is not connection:  # two opened at once: keep one
            connection.close()
        return self._connection

    async def query(
        self, statement: bytes, params: list[bytes | None], timeout: float | None = None, prepared: bool = False
    ) -> Any:
        """Send `statement` with text `params`; its last result (a `psycopg.pq` PGresult) once it has run. With
        `prepared`, as a named prepared statement of the connection (see the module doc)."""
        global prepared_statements
        if not (prepared and prepared_statements):
            return await self._query(statement, params, timeout, None)
        try:
            return await self._query(statement, params, timeout, statement_name(statement))
        except django_db.Error as error:
            if not _not_prepared_here(error):
                raise
        if prepared_statements:
            prepared_statements = False
            logger.warning(
                "the database session lost a prepared statement (a connection pooler in transaction mode without "
                "prepared statement support?): the data plane's statements are sent unprepared from now on"
            )
        return await self._query(statement, params, timeout, None)

    async def _query(self, statement: bytes, params: list[bytes | None], timeout: float | None, name) -> Any:
        loop = asyncio.get_running_loop()
        connection = self._connection
        if connection is None or connection.closed:
            if timeout:
                try:
                    connection = await asyncio.wait_for(self._ready(loop), timeout)
                except TimeoutError:
                    raise django_db.OperationalError(
                        f"the database did not answer within {timeout:g} s (connecting)"
                    ) from None
            else:
                connection = await self._ready(loop)
        future = connection.send(statement, params, name)
        if not timeout:
            return await future
        timer = loop.call_later(timeout, _expire, connection, future, timeout)
        try:
            return await future
        finally:
            timer.cancel()

    def connections_open(self) -> int:
        return 0 if self._connection is None or self._connection.closed else 1

    def close(self) -> None:
        connection = self._connection
        self._connection = None
        if connection is not None:
            connection.broken(django_db.OperationalError("the connection was closed"))


def _expire(connection: _Connection, future: asyncio.Future, timeout: float) -> None:
    if not future.done():
        error = django_db.OperationalError(f"the database did not answer within {timeout:g} s")
        future.set_exception(error)
        connection.broken(django_db.OperationalError(f"the connection was given up after {timeout:g} s"))


# One client per event loop (asyncio futures and readers belong to one loop); the clients of loops that
# closed are dropped (and their connections closed) when another loop opens one.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FastPG] = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()
_pid = os.getpid()


def client() -> FastPG:
    """The running event loop's client."""
    global _pid
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is not None:
        return found
    with _clients_lock:
        if _pid != os.getpid():  # forked: the parent's connections are not ours to use or close
            _clients.clear()
            _pid = os.getpid()
        for other, other_client in list(_clients.items()):
            if other.is_closed():
                other_client.close()
                del _clients[other]
        found = _clients[loop] = FastPG()
    return found


def open_connections() -> int:
    """Connections held by this process's clients (one per event loop that used one)."""
    return sum(c.connections_open() for c in list(_clients.values()))


def close_all(timeout: float = 5.0) -> None:
    """Close every client's connection (process or test-session end); callable from any thread."""
    with _clients_lock:
        clients = list(_clients.items())
        _clients.clear()
    for loop, fast in clients:
        if loop.is_closed() or not loop.is_running():
            fast.close()
            continue
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fast.close()
            continue
        done = threading.Event()

        def close_there(fast=fast, done=done) -> None:
            try:
                fast.close()
            finally:
                done.set()

        try:
            loop.call_soon_threadsafe(close_there)
        except RuntimeError:  # closed meanwhile
            fast.close()
            continue
        if not done.wait(timeout):
            logger.warning("a data plane PostgreSQL connection was not closed within %g s", timeout)
