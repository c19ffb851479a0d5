"""The hot-path statements of the spend counters, as plain SQL (valid on PostgreSQL and SQLite).

The ORM would build the same statements; writing them once here saves its per-query compilation on every
inference request. Values of non-integer columns go through the model fields' own database preparation.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import orjson
from django.db import DEFAULT_DB_ALIAS, connections

from budgets.counter_transaction import _DriverCursor, counter_transaction, fast_commit  # noqa: F401 (re-exported)
from budgets.models import AppliedSettlement, SpendCounter, SpendReservation

_tables: dict[tuple[str, type], str] = {}
_fields: dict[tuple[type, str], object] = {}


def _table(model) -> str:
    """The quoted table name (computed once per database: this runs on every request)."""
    key = (DEFAULT_DB_ALIAS, model)
    name = _tables.get(key)
    if name is None:
        name = _tables[key] = connections[DEFAULT_DB_ALIAS].ops.quote_name(model._meta.db_table)
    return name


def _prep(model, name: str, value, conn=None):
    """`value` as the model field stores it (the field looked up once)."""
    field = _fields.get((model, name))
    if field is None:
        field = _fields[(model, name)] = model._meta.get_field(name)
    return field.get_db_prep_save(value, conn if conn is not None else connections[DEFAULT_DB_ALIAS])


def hold_statement(*, counter_id: int, amount: int, limit_units: int, include_byok: bool) -> tuple[str, list]:
    """Add `amount` to reserved_units if spent (+ BYOK spent) + reserved + amount stays within the limit.

    The check and the increment are one statement (one row updated: held; none: refused): PostgreSQL
    re-evaluates the WHERE clause on the latest row version after waiting for a concurrent writer's lock;
    SQLite runs one writer at a time. A free request (amount 0) still needs the limit not to be reached.
    """
    used = "spent_units + reserved_units" + (" + byok_spent_units" if include_byok else "")
    comparison = "<=" if amount > 0 else "<"
    return (
        f"UPDATE {_table(SpendCounter)} SET reserved_units = reserved_units + %s "
        f"WHERE id = %s AND {used} + %s {comparison} %s",
        [amount, counter_id, amount, limit_units],
    )


def counter_ids_json(counter_ids: list[int]) -> str:
    """The JSON text of a reservation's counter ids (ints only: no encoder needed on the hot path)."""
    return "[" + ",".join(str(int(counter_id)) for counter_id in counter_ids) + "]"


def record_json(record: dict | None) -> str:
    """The JSON text of a hold's record (budgets/recovery.py: what a Generation row rebuilt from it needs)."""
    return orjson.dumps(record or {}, default=str).decode()


def reservation_statement(
    *,
    request_id: str,
    amount: int,
    counter_ids: list[int],
    now: datetime,
    expires_at: datetime,
    record: dict | None = None,
    reservation_id: uuid.UUID | None = None,
) -> tuple[uuid.UUID, str, list]:
    """The INSERT of a new hold's reservation row (its id, the statement, the parameters)."""
    reservation_id = reservation_id or uuid.uuid4()
    conn = connections[DEFAULT_DB_ALIAS]
    return (
        reservation_id,
        f"INSERT INTO {_table(SpendReservation)} "
        "(id, request_id, amount_units, counter_ids, created_at, expires_at, record) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        [
            _prep(SpendReservation, "id", reservation_id, conn),
            request_id[:100],
            amount,
            counter_ids_json(counter_ids),
            _prep(SpendReservation, "created_at", now, conn),
            _prep(SpendReservation, "expires_at", expires_at, conn),
            record_json(record),
        ],
    )


class _RefusedAt(Exception):
    def __init__(self, index: int) -> None:
        self.index = index


def hold_all(
    checks: list[tuple[int, int, bool]],
    *,
    amount: int,
    request_id: str,
    now: datetime,
    expires_at: datetime,
    record: dict | None = None,
    reservation_id: uuid.UUID | None = None,
) -> tuple[uuid.UUID, int | None]:
    """Hold `amount` on every counter of `checks` ((counter id, limit units, include BYOK spend), in ascending
    id order) and insert the reservation row, all or nothing. Returns the reservation id and None when every
    counter took the hold (committed), else the index in `checks` of the first counter that refused (nothing
    held, no row).

    On PostgreSQL, outside atomic(), this is one statement (`_HOLD`): one round trip. Elsewhere it is one
    conditional UPDATE per counter and the INSERT in one transaction.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    counter_ids = [counter_id for counter_id, _, _ in checks]
    reservation_id = reservation_id or uuid.uuid4()
    if conn.vendor == "postgresql" and not conn.in_atomic_block and conn.get_autocommit():
        refused_id = _hold_one_statement(conn, checks, amount, request_id, reservation_id, now, expires_at, record)
        return reservation_id, None if refused_id is None else counter_ids.index(refused_id)
    holds = [
        hold_statement(counter_id=counter_id, amount=amount, limit_units=limit_units, include_byok=include_byok)
        for counter_id, limit_units, include_byok in checks
    ]
    reservation_id, *reservation = reservation_statement(
        request_id=request_id,
        amount=amount,
        counter_ids=counter_ids,
        now=now,
        expires_at=expires_at,
        record=record,
        reservation_id=reservation_id,
    )
    try:
        with counter_transaction() as cursor:
            for index, (statement, params) in enumerate(holds):
                cursor.execute(statement, params)
                if cursor.rowcount != 1:
                    raise _RefusedAt(index)
            cursor.execute(*reservation)
    except _RefusedAt as refused:
        return reservation_id, refused.index
    return reservation_id, None


# The hold on PostgreSQL: one call of the function of migration budgets/0008 (0006's, plus the hold's record; one
# statement, one round trip; the function's plans are cached by the database session, where an equivalent CTE was
# planned on every call). Every argument is a bound parameter, so every hold has the same text: the event loop's
# connection prepares it once (gateway_project/loop_pg.py, `prepare`) and the database does not parse and plan it
# per hold.
_HOLD_ARGUMENT_TYPES = (
    "bigint[]",
    "bigint[]",
    "boolean[]",
    "bigint",
    "uuid",
    "text",
    "jsonb",
    "timestamptz",
    "timestamptz",
    "jsonb",
)
_HOLD = "SELECT budgets_spend_hold_v3({})".format(", ".join(f"%s::{t}" for t in _HOLD_ARGUMENT_TYPES))


def _array(values) -> str:
    """An array parameter in PostgreSQL's array syntax (`values`: ints, booleans as t/f, UUIDs), cast by the
    statement: psycopg's list adapter inspects every element of every list in Python (about 25 us per hold and
    settlement, docs/performance.md)."""
    return "{" + ",".join(values) + "}"


def _hold_params(checks, amount, request_id, reservation_id, now, expires_at, record=None) -> list:
    """The parameters of `_HOLD` (arrays and JSON as text, cast by the call; the rest adapted by psycopg)."""
    return [
        _array([str(int(counter_id)) for counter_id, _, _ in checks]),
        _array([str(int(limit_units)) for _, limit_units, _ in checks]),
        _array(["t" if include_byok else "f" for _, _, include_byok in checks]),
        int(amount),
        reservation_id,
        request_id[:100],
        counter_ids_json([c for c, _, _ in checks]),
        now,
        expires_at,
        record_json(record),
    ]


async def hold_all_async(
    checks: list[tuple[int, int, bool]],
    *,
    amount: int,
    request_id: str,
    now: datetime,
    expires_at: datetime,
    record: dict | None = None,
    reservation_id: uuid.UUID | None = None,
) -> tuple[uuid.UUID, int | None]:
    """`hold_all` on PostgreSQL over the event loop's connection (gateway_project/loop_pg.py): the same function
    call, sent without the database thread as a prepared statement. `now` and `expires_at` must be aware."""
    from gateway_project import loop_pg
    from gateway_project.db_deadline import deadline_seconds

    reservation_id = reservation_id or uuid.uuid4()
    params = _hold_params(checks, amount, request_id, reservation_id, now, expires_at, record)
    rows = await loop_pg.database().query(_HOLD, params, deadline_seconds(), prepare=True)
    refused_id = rows[0][0]
    if refused_id is None:
        return reservation_id, None
    return reservation_id, [counter_id for counter_id, _, _ in checks].index(refused_id)


_SETTLE_CALL = (
    "SELECT budgets_spend_settle_v2(%s::uuid[], %s::uuid[], %s::bigint[], %s::bigint[], %s::boolean[], "
    "%s::integer[], %s::bigint[], %s::timestamptz)"
)


def settle_statement(
    settlements: list[tuple[uuid.UUID, uuid.UUID, int, int, bool, tuple[int, ...]]], now: datetime
) -> tuple[str, list]:
    """The one-statement settlement of migration budgets/0005 and its parameters: `settlements` are
    (settlement id, reservation id, hold amount, cost, paid by a BYOK key, counter ids)."""
    owners: list[str] = []
    counter_ids: list[str] = []
    for index, (_, _, _, _, _, counters) in enumerate(settlements, start=1):
        for counter_id in counters:
            owners.append(str(index))
            counter_ids.append(str(int(counter_id)))
    return _SETTLE_CALL, [
        _array([str(settlement_id) for settlement_id, _, _, _, _, _ in settlements]),
        _array([str(reservation_id) for _, reservation_id, _, _, _, _ in settlements]),
        _array([str(int(amount)) for _, _, amount, _, _, _ in settlements]),
        _array([str(int(cost)) for _, _, _, cost, _, _ in settlements]),
        _array(["t" if is_byok else "f" for _, _, _, _, is_byok, _ in settlements]),
        _array(owners),
        _array(counter_ids),
        now,
    ]


async def settle_all_async(
    settlements: list[tuple[uuid.UUID, uuid.UUID, int, int, bool, tuple[int, ...]]], now: datetime
) -> int:
    """`counters.spend_settle_many` on PostgreSQL in one statement (the function of migration budgets/0005) over
    the event loop's connection (gateway_project/loop_pg.py); returns how many reservation rows it removed.
    `now` (aware) dates the applied settlements."""
    from gateway_project import loop_pg
    from gateway_project.db_deadline import deadline_seconds

    statement, params = settle_statement(settlements, now)
    rows = await loop_pg.database().query(statement, params, deadline_seconds(), prepare=True)
    value = rows[0][0]
    return 0 if value is None else int(value)


def _hold_one_statement(conn, checks, amount, request_id, reservation_id, now, expires_at, record) -> int | None:
    """The hold's function call on the database thread's connection: a psycopg cursor, the parameters bound
    (naive datetimes are taken in the session's time zone), server-side binding without a prepared statement
    (it would not survive pgbouncer's transaction mode)."""
    import psycopg

    conn.ensure_connection()
    params = _hold_params(checks, amount, request_id, reservation_id, now, expires_at, record)
    with conn.wrap_database_errors, psycopg.Cursor(conn.connection) as cursor:
        cursor.execute(_HOLD, params, prepare=False)
        return cursor.fetchone()[0]


def claim_settlements(cursor, settlement_ids: list[uuid.UUID], now: datetime) -> set[uuid.UUID]:
    """Record the settlements as applied; the ids this call recorded (the others were applied already)."""
    unique = list(dict.fromkeys(settlement_ids))
    created = _prep(AppliedSettlement, "created_at", now)
    params = []
    for settlement_id in unique:
        params += [_prep(AppliedSettlement, "id", settlement_id), created]
    cursor.execute(
        f"INSERT INTO {_table(AppliedSettlement)} (id, created_at) VALUES {', '.join(['(%s, %s)'] * len(unique))} "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        params,
    )
    return {key if isinstance(key := row[0], uuid.UUID) else uuid.UUID(key) for row in cursor.fetchall()}


def delete_reservations(cursor, reservation_ids: list[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """Delete the reservation rows; {id: reaped} of the rows this call removed (an already settled one is not
    among them; a reaped one is, with True: its hold was charged as spent by the reaper, not released)."""
    placeholders = ", ".join(["%s"] * len(reservation_ids))
    cursor.execute(
        f"DELETE FROM {_table(SpendReservation)} WHERE id IN ({placeholders}) RETURNING id, reaped_at",
        reservation_ids  # PostgreSQL takes the UUIDs as they are
        if connections[DEFAULT_DB_ALIAS].features.has_native_uuid_field
        else [_prep(SpendReservation, "id", reservation_id) for reservation_id in reservation_ids],
    )
    # PostgreSQL returns UUIDs, SQLite their hex text
    return {
        key if isinstance(key := row[0], uuid.UUID) else uuid.UUID(key): row[1] is not None for row in cursor.fetchall()
    }


def mark_reaped(cursor, reservation_id: uuid.UUID, now: datetime) -> bool:
    """Mark an unreaped reservation reaped if it is still expired at `now` (a renewal that committed since the
    reaper listed it made it live again); True when this call did it (exactly one caller ever gets True)."""
    at = _prep(SpendReservation, "reaped_at", now)
    cursor.execute(
        f"UPDATE {_table(SpendReservation)} SET reaped_at = %s "
        "WHERE id = %s AND reaped_at IS NULL AND expires_at <= %s",
        [at, _prep(SpendReservation, "id", reservation_id), at],
    )
    return cursor.rowcount == 1


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
