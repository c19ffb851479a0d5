"""Keeping the usage rollups: an additive upsert per batch of Generation rows, and a rebuild from the rows.

`rollup_generations(rows)` runs inside the accounting transaction that inserts the rows (inference/accounting.py,
after the response went out, group-committed): the batch is first summed in Python per (organization, hour,
dimension, value), those sums again per UTC day, then each tier is written with one
`INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x` statement (one round trip per tier: on PostgreSQL its
rows are one JSON parameter, elsewhere a multi-row VALUES of up to 400 rows per statement), hourly then daily,
rows in sorted order, so that concurrent writers lock rows in the same order (no deadlock). The daily row of a
day is therefore always the sum of its hourly rows, today's included.
A batch of N generations writes at most 6 x N rows per tier, usually far fewer (every row of a batch shares its
status and hour rows). It runs in a savepoint: if it fails, the Generation rows are still written (the failure
is logged and `rollup_usage` rebuilds the days).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from operator import attrgetter

import orjson
from django.db import DatabaseError, connection, transaction

from analytics.histogram import BIN_FIELDS, bin_of
from analytics.models import Dimension, UsageDailyRollup, UsageRollup

logger = logging.getLogger("gateway.analytics")

# Generation attribute read for each dimension (None is stored as "").
DIMENSION_SOURCES = {
    Dimension.MODEL: "model",
    Dimension.PROVIDER: "provider",
    Dimension.KEY: "key_hash",
    Dimension.WORKSPACE: "workspace_id",
    Dimension.USER: "user_id",
    Dimension.STATUS: "status",
}
SUMS = ("requests", "errors", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost")
KEY_COLUMNS = ("organization_id", "dimension", "bucket", "value")
VALUE_COLUMNS = SUMS + BIN_FIELDS
_dimension_values = attrgetter(*DIMENSION_SOURCES.values())  # the row's value of each dimension, in order
FAILED = "failed"
ROWS_PER_STATEMENT = 400  # x 37 parameters: within SQLite's 32,766 and PostgreSQL's 65,535


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _sums(rows: Iterable) -> dict[tuple, list]:
    totals: dict[tuple, list] = {}
    width = len(VALUE_COLUMNS)
    # First one pass over the rows summed per (organization, hour, latency bin, dimension values): the rows of a
    # batch mostly share them, so the six dimensions are then added once per group, not once per row.
    groups: dict[tuple, list] = {}
    for row in rows:
        key = (
            str(row.organization_id),  # as text: rows of one batch may carry it as a UUID or a string
            hour_of(row.created_at),
            None if row.latency_ms is None else len(SUMS) + bin_of(row.latency_ms),
            _dimension_values(row),
        )
        sums = groups.get(key)
        if sums is None:
            groups[key] = [1, 1 if row.status == FAILED else 0, row.input_tokens, row.output_tokens,
                           row.reasoning_tokens, row.cached_tokens, Decimal(row.cost)]  # fmt: skip
        else:
            sums[0] += 1
            sums[1] += 1 if row.status == FAILED else 0
            sums[2] += row.input_tokens
            sums[3] += row.output_tokens
            sums[4] += row.reasoning_tokens
            sums[5] += row.cached_tokens
            sums[6] += Decimal(row.cost)
    for (organization_id, hour, latency_bin, values), own in groups.items():
        for dimension, value in zip(DIMENSION_SOURCES, values, strict=True):
            key = (organization_id, dimension.value, hour, "" if value is None else str(value)[:200])
            sums = totals.get(key)
            if sums is None:
                sums = totals[key] = [0] * (width - 1 - len(BIN_FIELDS)) + [Decimal(0)] + [0] * len(BIN_FIELDS)
            for index, amount in enumerate(own):
                sums[index] += amount
            if latency_bin is not None:
                sums[latency_bin] += own[0]
    return totals


def daily_sums(hourly: dict[tuple, list]) -> dict[tuple, list]:
    """The hourly sums of a batch added up per UTC day (the same keys with the day instead of the hour)."""
    totals: dict[tuple, list] = {}
    for (organization_id, dimension, hour, value), sums in hourly.items():
        key = (organization_id, dimension, day_of(hour), value)
        into = totals.get(key)
        if into is None:
            totals[key] = list(sums)
        else:
            for index, amount in enumerate(sums):
                into[index] += amount
    return totals


def _upsert_sql(model, rows: int) -> str:
    table = connection.ops.quote_name(model._meta.db_table)
    columns = KEY_COLUMNS + VALUE_COLUMNS
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in VALUE_COLUMNS)
    values = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * rows)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values} "
        f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO UPDATE SET {updates}"
    )


_json_statements: dict[tuple[str, tuple], str] = {}


def _upsert_json_sql(models: tuple) -> str:
    """PostgreSQL: the upsert of every tier in `models` as one statement, each tier's rows one JSON array
    parameter (`[[organization, dimension, bucket, value, requests, ...], ...]`), whatever their number.

    One statement text per process, one value to bind per tier and one round trip for all tiers: the multi-row
    VALUES statement (37 placeholders a row) took psycopg about 1 ms of CPU to parse for every batch, had every
    value quoted in Python, and took a round trip per tier; this one, with two placeholders, parses in about
    14 µs (two tiers make it longer than the 4 KB psycopg caches). One array parameter per column (`unnest`)
    cost as much as the VALUES form in psycopg's array dumping. The tiers after the first are data-modifying
    CTEs chained so that each waits for the one before (`WHERE (SELECT count(*) FROM tier0) >= 0` is evaluated
    before the first row of the next is read): every writer locks rows tier by tier, in the same order as the
    other writers."""
    key = (connection.alias, models)
    statement = _json_statements.get(key)
    if statement is None:
        columns = KEY_COLUMNS + VALUE_COLUMNS
        updates = ", ".join(f"{c} = r.{c} + excluded.{c}" for c in VALUE_COLUMNS)
        parts = []
        for position, model in enumerate(models):
            fields = {f.column: f for f in model._meta.concrete_fields}
            values = ", ".join(f"(e->>{i})::{fields[c].db_type(connection)}" for i, c in enumerate(columns))
            after = f"WHERE (SELECT count(*) FROM tier{position - 1}) >= 0 " if position else ""
            parts.append(
                f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} AS r ({', '.join(columns)}) "
                f"SELECT {values} FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS a(e, n) {after}ORDER BY n "
                f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO UPDATE SET {updates}"
            )
        *first, last = parts
        chained = ", ".join(f"tier{position} AS ({part} RETURNING 1)" for position, part in enumerate(first))
        statement = _json_statements[key] = (f"WITH {chained} " if first else "") + last
    return statement


def _json_bytes(totals: dict[tuple, list]) -> bytes:
    """The rows of one tier, sorted by key, as the JSON parameter of `_upsert_json_sql` (the cost as exact text)."""
    return orjson.dumps([[*key, *totals[key]] for key in sorted(totals)], default=str)


def _json_rows(totals: dict[tuple, list]) -> str:
    return _json_bytes(totals).decode()


def _rollup_failed(error: Exception, rows: int) -> None:
    logger.error(
        "usage rollup of %d generation rows failed; `manage.py rollup_usage` rebuilds it", rows, exc_info=error
    )


def _params(totals: dict[tuple, list]) -> list[list]:
    adapt = connection.ops.adapt_datetimefield_value
    decimal = connection.ops.adapt_decimalfield_value
    organization = UsageRollup._meta.get_field("organization")
    cost_index = SUMS.index("cost")
    params = []
    for key in sorted(totals):
        organization_id, dimension, hour, value = key
        sums = list(totals[key])
        sums[cost_index] = decimal(sums[cost_index], 24, 10)
        org = organization.get_db_prep_value(uuid.UUID(organization_id), connection)
        params.append([org, dimension, adapt(hour), value, *sums])
    return params


def _upsert(model, params: list[list]) -> None:
    """Write the rows `params` (sorted by key: concurrent writers lock rows in the same order) into `model`."""
    with connection.cursor() as cursor:
        for first in range(0, len(params), ROWS_PER_STATEMENT):
            chunk = params[first : first + ROWS_PER_STATEMENT]
            cursor.execute(_upsert_sql(model, len(chunk)), [value for row in chunk for value in row])


def _upsert_postgresql(writes: list[tuple], generations: int) -> None:
    """Every tier's rows in one statement (`_upsert_json_sql`); `writes` is [(model, totals), ...].

    Inside the accounting transaction the savepoint that keeps a failed rollup from taking the Generation rows
    with it is sent with the statement, as one query (`SAVEPOINT; INSERT ...; RELEASE SAVEPOINT`, values bound
    client-side: psycopg sends several statements together only so): one round trip instead of three. On an
    error the savepoint is rolled back here and the error raised as Django's (the caller logs it). In an
    accounting batch (inference/accounting.py `deferred_statements`) the statement and its parameters are
    added to the batch's pipeline instead, in a savepoint of its own (a failure is logged there)."""
    import psycopg

    from inference.batch_statements import deferred_statements

    statement = _upsert_json_sql(tuple(model for model, _ in writes))
    batch = deferred_statements()
    params = [_json_rows(totals) for _, totals in writes]
    if batch is not None:  # an accounting batch: sent with its insert and COMMIT, in a savepoint of its own
        batch.add(statement, params, on_error=lambda error: _rollup_failed(error, generations))
        return
    if not connection.in_atomic_block:  # a caller outside any transaction: Django's savepoint handling
        with transaction.atomic():
            connection.ensure_connection()
            with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
                cursor.execute(statement, params)  # no prepared statement (pgbouncer's transaction mode)
        return
    with connection.wrap_database_errors, psycopg.ClientCursor(connection.connection) as cursor:
        try:
            cursor.execute(f"SAVEPOINT {_SAVEPOINT}; {statement}; RELEASE SAVEPOINT {_SAVEPOINT}", params)
        except psycopg.Error:
            cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")
            raise


_SAVEPOINT = "analytics_rollup"


TIERS = (UsageRollup, UsageDailyRollup)


def rollup_generations(rows: list, tiers: tuple = TIERS) -> None:
    """Add a batch of just-written Generation rows to their hourly and daily rollups (inside the caller's
    transaction). `tiers` is for bench/rollup_cost.py (the hourly tier alone, as before the daily tier)."""
    hourly = _sums(rows)
    if not hourly:
        return
    writes = [(UsageRollup, hourly)] if UsageRollup in tiers else []
    if UsageDailyRollup in tiers:
        writes.append((UsageDailyRollup, daily_sums(hourly)))
    try:
        if connection.vendor == "postgresql":
            _upsert_postgresql(writes, len(rows))
        else:
            with transaction.atomic():
                for model, totals in writes:
                    _upsert(model, _params(totals))
    except DatabaseError:
        logger.exception("usage rollup of %d generation rows failed; `manage.py rollup_usage` rebuilds it", len(rows))
