"""The hot-path statements of the spend counters, as plain SQL (valid on PostgreSQL and SQLite).

The ORM would build the same statements; writing them once here saves its per-query compilation on every
inference request. Values of non-integer columns go through the model fields' own database preparation.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import connection

from budgets.models import SpendCounter, SpendReservation


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _prep(model, name: str, value):
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def hold(cursor, *, counter_id: int, amount: int, limit_units: int, include_byok: bool) -> bool:
    """Add `amount` to reserved_units if spent (+ BYOK spent) + reserved + amount stays within the limit.

    The check and the increment are one statement: PostgreSQL re-evaluates the WHERE clause on the latest
    row version after waiting for a concurrent writer's lock; SQLite runs one writer at a time. A free
    request (amount 0) still needs the limit not to be reached.
    """
    used = "spent_units + reserved_units" + (" + byok_spent_units" if include_byok else "")
    comparison = "<=" if amount > 0 else "<"
    cursor.execute(
        f"UPDATE {_table(SpendCounter)} SET reserved_units = reserved_units + %s "
        f"WHERE id = %s AND {used} + %s {comparison} %s",
        [amount, counter_id, amount, limit_units],
    )
    return cursor.rowcount == 1


def insert_reservation(
    cursor, *, request_id: str, amount: int, counter_ids: list[int], now: datetime, expires_at: datetime
) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    cursor.execute(
        f"INSERT INTO {_table(SpendReservation)} (id, request_id, amount_units, counter_ids, created_at, expires_at) "
        "VALUES (%s, %s, %s, %s, %s, %s)",
        [
            _prep(SpendReservation, "id", reservation_id),
            request_id[:100],
            amount,
            _prep(SpendReservation, "counter_ids", counter_ids),
            _prep(SpendReservation, "created_at", now),
            _prep(SpendReservation, "expires_at", expires_at),
        ],
    )
    return reservation_id


def delete_reservation(cursor, reservation_id: uuid.UUID) -> bool:
    """Delete the reservation row; True when this call removed it (exactly one caller ever gets True)."""
    cursor.execute(
        f"DELETE FROM {_table(SpendReservation)} WHERE id = %s", [_prep(SpendReservation, "id", reservation_id)]
    )
    return cursor.rowcount == 1


def delete_reservations(cursor, reservation_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Delete the reservation rows; the ids this call removed (a reaped or already settled one is not among them)."""
    placeholders = ", ".join(["%s"] * len(reservation_ids))
    cursor.execute(
        f"DELETE FROM {_table(SpendReservation)} WHERE id IN ({placeholders}) RETURNING id",
        [_prep(SpendReservation, "id", reservation_id) for reservation_id in reservation_ids],
    )
    return {uuid.UUID(str(row[0])) for row in cursor.fetchall()}


def apply(cursor, *, counter_id: int, release: int, cost: int, cost_column: str) -> None:
    """Subtract a released hold from reserved_units and add a cost to `cost_column` of one counter."""
    if not release and not cost:
        return
    cursor.execute(
        f"UPDATE {_table(SpendCounter)} SET reserved_units = reserved_units - %s, "
        f"{cost_column} = {cost_column} + %s WHERE id = %s",
        [release, cost, counter_id],
    )


def apply_totals(cursor, *, counter_id: int, release: int, spent: int, byok_spent: int) -> None:
    """Subtract released holds from reserved_units and add costs to both spend columns of one counter."""
    if not release and not spent and not byok_spent:
        return
    cursor.execute(
        f"UPDATE {_table(SpendCounter)} SET reserved_units = reserved_units - %s, "
        "spent_units = spent_units + %s, byok_spent_units = byok_spent_units + %s WHERE id = %s",
        [release, spent, byok_spent, counter_id],
    )


def fast_commit(cursor) -> None:
    """PostgreSQL: do not wait for the WAL flush when this transaction commits.

    Other sessions see the commit at once, so the checks stay atomic; only a crash of the PostgreSQL server
    itself can lose the last commits (at most 3 x wal_writer_delay, 600 ms by default). A lost hold is
    harmless (its request settles without a hold to release); a lost settlement under-counts that
    request's cost in the counter (its Generation row, written durably, still records it). Waiting for the
    flush instead costs a disk sync per request on the thread every database call of the process shares.
    """
    if connection.vendor == "postgresql":
        cursor.execute("SET LOCAL synchronous_commit = off")
