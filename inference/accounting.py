"""The one Generation row written for every request that reached routing (its cost: metering/cost.py).

`record_generations_sync(contexts)` writes rows in one `transaction.atomic()`: `generation_recording` per
row (receivers may set fields), one bulk insert, `generation_recorded` per row (receivers write dependent
rows such as the observability outbox), then `generations_recorded` once for the batch (the usage rollups).
inference.recorder calls it off the request's critical path.

On PostgreSQL the batch's writes are sent at the end as one query, `BEGIN; <insert>; <rankings sample>;
SAVEPOINT; <rollups>; RELEASE SAVEPOINT; COMMIT` (`BatchStatements`): the receivers that write add their
statement to the batch (`deferred_statements`) instead of running it; a receiver that runs a query of its own
through Django's cursors (the observability outbox) first sends what the batch holds, so it sees the rows.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import transaction
from django.db.models.base import ModelState

from inference.batch_statements import BatchStatements, deferred_statements, deferring
from inference.interrupted import replacing_interrupted
from inference.models import Generation
from inference.pipeline.context import Context
from inference.signals import generation_recorded, generation_recording, generations_recorded
from metering.cost import OVER_HOLD, final_cost

logger = logging.getLogger("gateway.accounting")

# ctx.extras flag set by inference.recorder when a row was refused: write it without its free-form fields.
STRIP_FREE_FORM = "accounting.strip_free_form"
CONTEXT_BUCKETS = (
    (1_000, "1k"),
    (4_000, "4k"),
    (16_000, "16k"),
    (64_000, "64k"),
    (128_000, "128k"),
    (256_000, "256k"),
    (1_000_000, "1m"),
)
MODALITY_OF_PART = {
    "input_text": "text",
    "text": "text",
    "output_text": "text",
    "input_image": "image",
    "input_file": "file",
    "input_audio": "audio",
}


def context_bucket(input_tokens: int) -> str:
    for limit, name in CONTEXT_BUCKETS:
        if input_tokens <= limit:
            return name
    return "1m+"


def input_modalities(body: dict[str, Any]) -> list[str]:
    items = body.get("input")
    if not isinstance(items, list):
        return ["text"]
    found: set[str] = set()
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            found.add("text")
        elif isinstance(content, list):
            found.update(MODALITY_OF_PART.get(p.get("type"), "text") for p in content if isinstance(p, dict))
    return sorted(found or {"text"})


def _header(ctx: Context, name: str) -> str:
    """A request header as recorded (at most 500 characters, no NUL)."""
    return (ctx.headers.get(name) or "")[:500].replace("\x00", "")


def build_generation(ctx: Context) -> Generation:
    """The unsaved Generation row of this request, from the context and its outcome."""
    principal = ctx.principal
    outcome = ctx.outcome
    candidate = outcome.candidate
    usage = outcome.usage
    error = outcome.error
    body = ctx.body
    now = outcome.completed_at or datetime.now(UTC)
    cost = final_cost(ctx)
    over_hold = ctx.extras.get(OVER_HOLD)
    stripped = ctx.extras.get(STRIP_FREE_FORM, False)
    session_id = (ctx.session_id or "")[:256]
    return unsaved_generation(
        id=uuid.UUID(ctx.request_id),
        organization_id=principal.organization_id,
        workspace_id=principal.workspace_id,
        api_key_id=principal.key_id,
        key_hash=principal.key_hash,
        user_id=principal.user_id,
        session_id=session_id.replace("\x00", "") if stripped else session_id,
        requested_model=str(ctx.extras.get("inference.requested") or body.get("model") or "")[:200],
        model=candidate.model_slug if candidate else "",
        model_permaslug=candidate.canonical_slug if candidate else "",
        provider=candidate.provider_slug if candidate else "",
        endpoint_id=candidate.endpoint_id if candidate else None,
        upstream_id=outcome.upstream_id[:200],
        status=outcome.status,
        finish_reason=outcome.finish_reason[:50],
        error_code=getattr(error, "status", None),
        error_message=str(getattr(error, "message", "") or ""),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cost=cost,
        reported_cost=cost + over_hold if over_hold else None,
        usage_estimated=usage.estimated,
        cache_hit=outcome.cache_hit,
        is_byok=outcome.credential_is_byok,
        streamed=ctx.stream,
        ingress_format=ctx.ingress_format,
        latency_ms=outcome.latency_ms,
        ttft_ms=outcome.ttft_ms,
        tool_calls=outcome.tool_calls,
        input_modalities=input_modalities(body),
        output_modalities=list(candidate.output_modalities) if candidate and candidate.output_modalities else ["text"],
        context_bucket=context_bucket(usage.input_tokens),
        pipeline=ctx.pipeline,
        trace={} if stripped else body.get("trace") or {},
        metadata={} if stripped else body.get("metadata") or {},
        data_region=ctx.region,
        http_referer=_header(ctx, "http-referer") or _header(ctx, "referer"),
        user_agent=_header(ctx, "user-agent"),
        client_metadata={} if stripped else body.get("client_metadata") or {},
        created_at=ctx.created_at,
        completed_at=now,
        category=None,
        language_type=None,
    )


_GENERATION_ATTNAMES = frozenset(f.attname for f in Generation._meta.concrete_fields)


def unsaved_generation(**values: Any) -> Generation:
    """An unsaved Generation with exactly these attribute values (every concrete field's attname given once).

    What `Generation(**values)` gives for them, without `Model.__init__` (its per-field descriptor walk and the
    pre_init/post_init signals, which nothing in the project receives): 1 µs instead of about 17 per row.
    """
    if values.keys() != _GENERATION_ATTNAMES:  # a field missing would be loaded from the database when read
        raise TypeError(f"Generation fields not given or unknown: {sorted(values.keys() ^ _GENERATION_ATTNAMES)}")
    row = Generation.__new__(Generation)
    row._state = ModelState()
    row.__dict__.update(values)
    return row


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


_PLAIN_TYPES = frozenset({"CharField", "TextField", "PositiveIntegerField", "IntegerField", "BooleanField"})
_TEXT_TYPES = frozenset({"CharField", "TextField"})
_insert_plans: dict[str, tuple[str, list]] = {}


def _insert_plan(conn) -> tuple[str, list]:
    """The INSERT statement of Generation rows for this connection, and what to read from each row.

    PostgreSQL: one statement for the whole batch, its rows one JSON parameter (`[[id, organization, ...], ...]`,
    one list per row in the order of the fields, JSON fields as JSON), and the attribute names to read. Others:
    the one-row statement run with `executemany`, and one preparation per column (None when the Python value
    goes to the driver as it is). Built once per database alias."""
    plan = _insert_plans.get(conn.alias)
    if plan is None:
        fields = Generation._meta.concrete_fields
        columns = ", ".join(conn.ops.quote_name(f.column) for f in fields)
        table = conn.ops.quote_name(Generation._meta.db_table)
        if conn.vendor == "postgresql":
            values = []
            for index, f in enumerate(fields):
                kind = f.get_internal_type()
                if kind == "JSONField":
                    values.append(f"e->{index}")
                elif kind in _TEXT_TYPES:  # as text: the column's own length check applies (a cast would cut)
                    values.append(f"e->>{index}")
                else:
                    values.append(f"(e->>{index})::{f.rel_db_type(conn) if f.is_relation else f.db_type(conn)}")
            sql = (
                f"INSERT INTO {table} ({columns}) SELECT {', '.join(values)} "
                f"FROM jsonb_array_elements(%s::jsonb) AS a(e){replacing_interrupted(conn, fields, table)}"
            )
            plan = _insert_plans[conn.alias] = (sql, [f.attname for f in fields])
        else:
            placeholders = ", ".join(["%s"] * len(fields))
            sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders}){replacing_interrupted(conn, fields, table)}"
            preps = [(f.attname, None if f.get_internal_type() in _PLAIN_TYPES else f.get_db_prep_save) for f in fields]
            plan = _insert_plans[conn.alias] = (sql, preps)
    return plan


def _generations_batch(conn, rows: list[Generation]) -> tuple[str, list[str]]:
    """PostgreSQL: the INSERT of `rows` and its one parameter, the rows as JSON text."""
    sql, plan = _insert_plan(conn)
    return sql, [orjson.dumps([[getattr(row, name) for name in plan] for row in rows], default=str).decode()]


def insert_generations(rows: list[Generation]) -> None:
    """The INSERT of a batch, without the ORM's per-row query compilation: a fraction of `bulk_create`'s CPU.

    PostgreSQL: one statement whose only parameter is the batch as JSON (orjson: about 2 µs a row, where binding
    41 parameters a row cost about ten times that in psycopg), the values converted to the columns' types by
    the database; inside an accounting batch (`record_generations_sync`) it is sent with the batch's other
    statements and its COMMIT as one query (`BatchStatements`), else on its own (the statement text never
    changes, so its parsing is cached). Others: one statement run with `executemany`, each value prepared the
    way its model field prepares it."""
    conn = transaction.get_connection()
    if conn.vendor == "postgresql":
        import psycopg

        sql, params = _generations_batch(conn, rows)
        batch = deferred_statements()
        if batch is not None:
            batch.add(sql, params)
            return
        conn.ensure_connection()
        # Server-side binding of the one parameter; no prepared statement (pgbouncer's transaction mode).
        with conn.wrap_database_errors, psycopg.Cursor(conn.connection) as cursor:
            cursor.execute(sql, params, prepare=False)
        return
    sql, plan = _insert_plan(conn)
    params = [
        [getattr(row, name) if prep is None else prep(getattr(row, name), conn) for name, prep in plan] for row in rows
    ]
    with conn.cursor() as cursor:
        cursor.executemany(sql, params)


def _receivers(signal) -> list | None:
    """The signal's receivers for Generation, resolved once per batch (a `send` costs about 3 µs); None when an
    asynchronous receiver is connected (then `send` runs them)."""
    sync_receivers, async_receivers = signal._live_receivers(Generation)
    return None if async_receivers else sync_receivers


def _send_per_row(signal, rows: list[Generation], contexts: list[Context]) -> None:
    receivers = _receivers(signal)
    if receivers is None:
        for row, ctx in zip(rows, contexts, strict=True):
            signal.send(sender=Generation, generation=row, ctx=ctx)
        return
    for receiver in receivers:
        for row, ctx in zip(rows, contexts, strict=True):
            receiver(signal=signal, sender=Generation, generation=row, ctx=ctx)


def record_generations_sync(contexts: list[Context]) -> list[Generation]:
    """Write the rows of several requests in one transaction (signals per row, around one bulk insert).

    On PostgreSQL the batch's statements (the insert, the rankings sample, the rollups in their savepoint)
    are sent at the end as one query with its BEGIN and COMMIT (`BatchStatements`): one round trip per batch
    where there were four (BEGIN, INSERT, the rollups, COMMIT)."""
    rows = [build_generation(ctx) for ctx in contexts]
    connection = transaction.get_connection()
    postgresql = connection.vendor == "postgresql"
    owns_transaction = not connection.in_atomic_block
    with transaction.atomic():
        _send_per_row(generation_recording, rows, contexts)
        if not postgresql:
            insert_generations(rows)
            _send_per_row(generation_recorded, rows, contexts)
            generations_recorded.send(sender=Generation, generations=rows)
            return rows
        with deferring(BatchStatements(owns_transaction=owns_transaction)) as batch:
            insert_generations(rows)
            _send_per_row(generation_recorded, rows, contexts)
            generations_recorded.send(sender=Generation, generations=rows)
        batch.flush(commit=True)
    return rows


def record_generation_sync(ctx: Context) -> Generation:
    return record_generations_sync([ctx])[0]
