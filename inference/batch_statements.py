"""An accounting batch's statements sent together on PostgreSQL, in one pipeline (inference/accounting.py).

`record_generations_sync` collects, while its signals run, the statements of the batch (`deferring`): the
Generation insert and what the receivers write (`deferred_statements().add(sql, params)`: the rankings sample,
the observability outbox, the usage rollups), their values bound parameters, and sends them at the end in one
psycopg pipeline on Django's connection (`BEGIN`, the statements, `COMMIT`, one sync): one round trip, no
statement text built by hand. A statement added with `on_error` runs in a savepoint of its own, so its failure
is logged and the rest of the batch kept (the pipeline stops at the first error: the savepoint is rolled back
and the statements after it are sent again).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager

from django.db import transaction

_local = threading.local()
_native: dict[str | bytes, bytes] = {}
_PLACEHOLDER = re.compile(rb"%(%|s)")


def native(sql: str | bytes) -> bytes:
    """`sql` with libpq's placeholders (`$1`, `$2`, ...) for psycopg's `%s` (and `%` for `%%`), once per text: the
    batch goes through psycopg's raw cursor, which does not parse the statement for every execution (psycopg
    caches its parsing only for statements under 4 KB: the rollups' upsert is longer)."""
    found = _native.get(sql)
    if found is None:
        numbers = iter(range(1, 10_000))
        text = sql.encode() if isinstance(sql, str) else sql
        found = _native[sql] = _PLACEHOLDER.sub(lambda m: b"%" if m.group(1) == b"%" else b"$%d" % next(numbers), text)
    return found


def deferred_statements() -> BatchStatements | None:
    """The statements of the accounting batch being recorded on this thread (PostgreSQL), or None.

    A receiver of the accounting signals that writes with a statement of its own adds it here (with its
    parameters) instead of executing it: it is sent with the batch's other statements, between `BEGIN` and
    `COMMIT`, in one pipeline (one round trip for the whole batch). Any query run through Django's cursors
    meanwhile first sends the statements added so far, so nothing runs before the rows it may read."""
    return getattr(_local, "batch", None)


class BatchStatements:
    """The statements of one accounting batch on PostgreSQL, sent together at the end of its transaction.

    `add(sql, params)`: a statement whose failure fails the batch (the Generation insert, the rankings sample).
    `add(sql, params, on_error=...)`: a statement in a savepoint of its own (the usage rollups, the outbox): when
    it fails, the savepoint is rolled back, `on_error(error)` is called (it logs) and the rest of the batch is
    written. The statements go out in one pipeline of Django's psycopg connection, followed by `COMMIT` when the
    batch owns its transaction (Django's `atomic()` of the batch then has nothing left to commit: psycopg's
    commit is a no-op on an idle connection), alone inside a caller's transaction."""

    def __init__(self, *, owns_transaction: bool) -> None:
        self.parts: list[tuple[str | bytes, Sequence, Callable[[Exception], None] | None]] = []
        self.owns_transaction = owns_transaction

    def add(self, sql: str | bytes, params: Sequence = (), on_error: Callable[[Exception], None] | None = None):
        self.parts.append((sql, params, on_error))

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
        begin = commit and raw.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if begin:  # our own BEGIN in the pipeline: psycopg's would be followed by a sync of its own
            raw.autocommit = True
        try:
            with connection.wrap_database_errors:
                self._send(raw, parts, begin=begin, commit=commit)
        finally:
            if begin and raw.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raw.autocommit = False

    def _send(self, raw, parts, *, begin: bool, commit: bool) -> None:
        import psycopg

        try:
            # Server-side binding, no prepared statement (pgbouncer's transaction mode); one sync at the end.
            with raw.pipeline(), psycopg.RawCursor(raw) as cursor:
                if begin:
                    cursor.execute(b"BEGIN", prepare=False)
                for index, (sql, params, on_error) in enumerate(parts):
                    if on_error is None:
                        cursor.execute(native(sql), params or None, prepare=False)
                    else:
                        cursor.execute(b"SAVEPOINT accounting_%d" % index, prepare=False)
                        cursor.execute(native(sql), params or None, prepare=False)
                        cursor.execute(b"RELEASE SAVEPOINT accounting_%d" % index, prepare=False)
                if commit:
                    cursor.execute(b"COMMIT", prepare=False)
        except psycopg.Error as error:
            failed = self._failed_guarded(raw, parts)
            if failed is None:  # a statement outside any savepoint: the batch fails (Django rolls it back)
                raise
            parts[failed][2](error)
            self._send(raw, parts[failed + 1 :], begin=False, commit=commit)

    @staticmethod
    def _failed_guarded(raw, parts) -> int | None:
        """After an error: the statement in a savepoint that failed (its savepoint rolled back), or None."""
        import psycopg

        if raw.pgconn.transaction_status != psycopg.pq.TransactionStatus.INERROR:
            return None
        with psycopg.Cursor(raw) as cursor:
            for index in reversed(range(len(parts))):
                if parts[index][2] is None:
                    continue
                try:
                    cursor.execute(b"ROLLBACK TO SAVEPOINT accounting_%d" % index, prepare=False)
                except psycopg.Error:  # not established: the error came before it
                    continue
                cursor.execute(b"RELEASE SAVEPOINT accounting_%d" % index, prepare=False)
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
