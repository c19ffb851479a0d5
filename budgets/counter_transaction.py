"""The one transaction every spend-counter write runs in (holds, settlements, reaping; the rate limits' database
store too), on the driver's own connection outside `atomic()`: see `counter_transaction`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

_FAST_COMMIT = "SET LOCAL synchronous_commit = off"


def fast_commit(cursor) -> None:
    """PostgreSQL: do not wait for the WAL flush when this transaction commits.

    Other sessions see the commit at once, so the checks stay atomic; only a crash of the PostgreSQL server
    itself can lose the last commits (at most 3 x wal_writer_delay, 600 ms by default). A lost hold is
    harmless (its request settles without a hold to release); a lost settlement under-counts that
    request's cost in the counter (its Generation row, written durably, still records it). Waiting for the
    flush instead costs a disk sync per request on the thread every database call of the process shares.
    """
    if connection.vendor == "postgresql":
        cursor.execute(_FAST_COMMIT)


class _DriverCursor:
    """The database driver's own cursor, with Django's `%s` placeholders (SQLite's driver wants `?`)."""

    __slots__ = ("cursor", "qmark")
    _qmark_sql: dict[str, str] = {}

    def __init__(self, cursor, qmark: bool) -> None:
        self.cursor = cursor
        self.qmark = qmark

    def execute(self, sql: str, params=()) -> None:
        if self.qmark:
            converted = self._qmark_sql.get(sql)
            if converted is None:
                converted = self._qmark_sql[sql] = sql.replace("%s", "?")
            sql = converted
        self.cursor.execute(sql, params)

    @property
    def rowcount(self) -> int:
        return self.cursor.rowcount

    def fetchall(self) -> list:
        return self.cursor.fetchall()


@contextmanager
def counter_transaction() -> Iterator:
    """One transaction for the statements of a hold, a settlement or a reaping (every counter write).

    Outside any `atomic()` block (the data plane) it is BEGIN ... COMMIT on the driver's connection: Django's
    transaction and cursor wrappers cost more than the statements themselves on SQLite (about 90 us of
    150 per hold). Errors still come out as Django's database exceptions (`wrap_database_errors`), so a
    lost connection is recognised and replaced as everywhere else. Inside an `atomic()` block it is a
    savepoint through Django, as any other code would do.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.in_atomic_block or not conn.get_autocommit():
        with transaction.atomic(), conn.cursor() as cursor:
            fast_commit(cursor)
            yield cursor
        return
    conn.ensure_connection()
    with conn.wrap_database_errors:
        raw = conn.connection.cursor()
        try:
            if conn.vendor == "postgresql":
                raw.execute(f"BEGIN; {_FAST_COMMIT}")  # one round trip (no parameters: both in one query)
            else:  # the write lock at the start, as db_options.SQLITE_OPTIONS's transaction_mode does for atomic()
                raw.execute("BEGIN IMMEDIATE")
            cursor = _DriverCursor(raw, qmark=conn.vendor == "sqlite")
            try:
                yield cursor
            except BaseException:
                raw.execute("ROLLBACK")
                raise
            raw.execute("COMMIT")
        finally:
            raw.close()
