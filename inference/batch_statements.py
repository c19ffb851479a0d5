"""An accounting batch's statements sent as one query on PostgreSQL (inference/accounting.py).

`record_generations_sync` collects, while its signals run, the statements of the batch (`deferring`): the
Generation insert and what the receivers write (`deferred_statements().add(...)`: the rankings sample, the
observability outbox, the usage rollups), each value quoted beforehand (`sql_literal`), and sends them at the
end as `BEGIN; <statements>; COMMIT`, one round trip; a statement added with `on_error` runs in a savepoint of
its own, so its failure is logged and the rest of the batch kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager

from django.db import transaction

_local = threading.local()


def deferred_statements() -> BatchStatements | None:
    """The statements of the accounting batch being recorded on this thread (PostgreSQL), or None.

    A receiver of the accounting signals that writes with a statement of its own (already bound, see
    `sql_literal`) adds it here instead of executing it: it is sent with the batch's other statements, between
    `BEGIN` and `COMMIT`, as one query (one round trip for the whole batch). Any query run through Django's
    cursors meanwhile first sends the statements added so far, so nothing runs before the rows it may read."""
    return getattr(_local, "batch", None)


def sql_literal(value: bytes | str) -> bytes:
    """`value` quoted as a PostgreSQL string literal for this thread's connection (libpq's PQescapeLiteral)."""
    if isinstance(value, str):
        value = value.encode()
    import psycopg

    connection = transaction.get_connection()
    connection.ensure_connection()
    return psycopg.pq.Escaping(connection.connection.pgconn).escape_literal(value)


class BatchStatements:
    """The statements of one accounting batch on PostgreSQL, sent together at the end of its transaction.

    `add(sql)`: a statement whose failure fails the batch (the Generation insert, the rankings sample).
    `add(sql, on_error=...)`: a statement in a savepoint of its own (the usage rollups): when it fails, the
    savepoint is rolled back, `on_error(error)` is called (it logs) and the rest of the batch is written.
    The query sent at the end is `BEGIN; <statements>; COMMIT` when the batch owns its transaction (Django's
    `atomic()` of the batch then has nothing left to commit: psycopg's commit is a no-op on an idle
    connection), the statements alone inside a caller's transaction."""

    def __init__(self, *, owns_transaction: bool) -> None:
        self.parts: list[tuple[bytes, Callable[[Exception], None] | None]] = []
        self.owns_transaction = owns_transaction
        self.begun = False  # a query of the batch's transaction went out already (psycopg sent BEGIN)

    def add(self, sql: bytes, on_error: Callable[[Exception], None] | None = None) -> None:
        self.parts.append((sql, on_error))

    def flush(self, *, commit: bool) -> None:
        """Send the statements added so far (and COMMIT when `commit` and the batch owns its transaction)."""
        parts, self.parts = self.parts, []
        commit = commit and self.owns_transaction
        if not parts and not commit:
            return
        import psycopg

        connection = transaction.get_connection()
        connection.ensure_connection()
        raw = connection.connection
        begin = commit and not self.begun and raw.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if begin:  # our own BEGIN, in the same query: psycopg's would be a round trip of its own
            raw.autocommit = True
        try:
            with connection.wrap_database_errors, psycopg.Cursor(raw) as cursor:
                self._send(cursor, parts, begin=begin, commit=commit)
        finally:
            if begin and raw.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raw.autocommit = False
        self.begun = True

    def _send(self, cursor, parts, *, begin: bool, commit: bool) -> None:
        import psycopg

        pieces = [b"BEGIN"] if begin else []
        for index, (sql, on_error) in enumerate(parts):
            if on_error is None:
                pieces.append(sql)
            else:
                pieces += [b"SAVEPOINT accounting_%d" % index, sql, b"RELEASE SAVEPOINT accounting_%d" % index]
        if commit:
            pieces.append(b"COMMIT")
        try:
            cursor.execute(b"; ".join(pieces), prepare=False)  # no parameters: one simple query
        except psycopg.Error as error:
            failed = self._failed_guarded(cursor, parts)
            if failed is None:  # a statement outside any savepoint: the batch fails (Django rolls it back)
                raise
            parts[failed][1](error)
            self._send(cursor, parts[failed + 1 :], begin=False, commit=commit)

    @staticmethod
    def _failed_guarded(cursor, parts) -> int | None:
        """After an error: the statement in a savepoint that failed (its savepoint rolled back), or None."""
        import psycopg

        if cursor.connection.pgconn.transaction_status != psycopg.pq.TransactionStatus.INERROR:
            return None
        for index in reversed(range(len(parts))):
            if parts[index][1] is None:
                continue
            try:
                cursor.execute(b"ROLLBACK TO SAVEPOINT accounting_%d; RELEASE SAVEPOINT accounting_%d" % (index, index))
            except psycopg.Error:  # not established: the error came before it
                continue
            return index
        return None


@contextmanager
def deferring(batch: BatchStatements):
    """Collect the batch's statements on this thread; a query through Django's cursors sends them first."""

    def send_first(execute, sql, params, many, context):
        if batch.parts:
            batch.flush(commit=False)
        return execute(sql, params, many, context)

    _local.batch = batch
    try:
        with transaction.get_connection().execute_wrapper(send_first):
            yield batch
    finally:
        _local.batch = None
