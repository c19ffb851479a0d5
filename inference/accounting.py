"""Cost of a generation and the one Generation row written for every request that reached routing.

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
from decimal import Decimal
from typing import Any

import orjson
from django.db import transaction
from django.db.models.base import ModelState

from inference.batch_statements import BatchStatements, deferred_statements, deferring, sql_literal
from inference.interrupted import replacing_interrupted
from inference.models import Generation
from inference.pipeline.context import Candidate, Context, Usage
from inference.signals import generation_recorded, generation_recording, generations_recorded
from metering.estimate import OUTPUT_FRAMING_TOKENS, token_bound
from metering.holds import OVER_HOLD, OWNED_BY_TURNS, UNITS_PER_USD
from metering.prices import bound_cost, request_tier, usage_cost

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


def compute_cost(candidate: Candidate | None, usage: Usage, tier: str = "auto") -> Decimal:
    """USD cost of `usage` on `candidate` (metering/prices.py): what the upstream reported, else its price sheet."""
    return usage_cost(candidate, usage, tier)


def price(ctx: Context, candidate: Candidate | None, usage: Usage) -> Decimal:
    """The cost of `usage` at the tier the request asked for."""
    return usage_cost(candidate, usage, request_tier(ctx.body))


def within_hold(ctx: Context, cost: Decimal) -> Decimal:
    """An estimated cost never exceeds the request's hold (the worst case reserved for it), when it has one."""
    amount = getattr(ctx.reservation, "amount_units", None)
    if amount is None:
        return cost
    return min(cost, Decimal(amount) / UNITS_PER_USD)


def estimated_usage(ctx: Context, candidate: Candidate, output_bytes: int) -> Usage:
    """Usage the upstream did not report: the input bound, and the output counted from what was produced (its
    UTF-8 bytes plus framing, see metering/estimate.py) within the output cap sent upstream."""
    bound = token_bound(ctx.body, candidate)
    output = min(output_bytes + OUTPUT_FRAMING_TOKENS, bound.output_tokens)
    return Usage(input_tokens=bound.input_tokens, output_tokens=output, reported=False, estimated=True)


def settled_usage(ctx: Context, candidate: Candidate, usage: Usage, output: list[dict[str, Any]]) -> Usage:
    """The usage of a finished answer: the upstream's, or when it reported none, the estimate (logged)."""
    if usage.reported:
        return usage
    logger.warning(
        "%s answered request %s without usage; charged from the estimate", candidate.provider_slug, ctx.request_id
    )
    return estimated_usage(ctx, candidate, len(orjson.dumps(output)) if output else 0)


def note_over_hold(ctx: Context, excess: Decimal) -> None:
    """The provider reported usage costing `excess` more than the hold it was charged: the row keeps the
    provider's figure in `reported_cost` (the answer's `usage.cost`, the row's `cost` and the counters say what
    was charged, the hold)."""
    ctx.extras[OVER_HOLD] = ctx.extras.get(OVER_HOLD, Decimal(0)) + excess
    logger.warning("request %s: the provider reported $%s more than its hold; charged the hold", ctx.request_id, excess)


def settled_cost(ctx: Context, candidate: Candidate | None, usage: Usage) -> Decimal:
    """The cost recorded, charged and answered: the price of the usage, within the request's hold (a provider
    reporting more than the hold is charged the hold, and the row says so: `note_over_hold`). Turns held one by
    one (budgets/turns.py) cap their own costs at their holds."""
    cost = price(ctx, candidate, usage)
    if usage.estimated:
        return within_hold(ctx, cost)
    if ctx.extras.get(OWNED_BY_TURNS):
        return cost
    charged = within_hold(ctx, cost)
    if charged < cost:
        note_over_hold(ctx, cost - charged)
    return charged


def charge_unanswered(ctx: Context, candidate: Candidate, is_byok: bool) -> None:
    """The request went to `candidate` but its answer never came (the client went away while the upstream was
    working): the provider may bill it whole, so it is charged its worst case on that endpoint (its hold)."""
    outcome = ctx.outcome
    bound = token_bound(ctx.body, candidate)
    outcome.candidate = candidate
    outcome.credential_is_byok = is_byok
    outcome.usage = Usage(
        input_tokens=bound.input_tokens, output_tokens=bound.output_tokens, reported=False, estimated=True
    )
    cost = bound_cost(candidate, bound.input_tokens, bound.output_tokens, request_tier(ctx.body))
    outcome.cost = within_hold(ctx, cost)


def _output_bytes(ctx: Context, streamed_text: str) -> int:
    items = ctx.outcome.output
    size = len(orjson.dumps(items)) if items else 0
    return max(size, len(streamed_text.encode()))


def estimate_usage(ctx: Context, streamed_text: str) -> None:
    """A stream that failed or was cancelled after the first byte has no upstream usage: charge the input bound
    and the output streamed so far (within the output cap and the hold), marked as estimated."""
    outcome = ctx.outcome
    if outcome.usage.input_tokens or outcome.usage.output_tokens or outcome.candidate is None:
        return
    outcome.usage = estimated_usage(ctx, outcome.candidate, _output_bytes(ctx, streamed_text))
    outcome.cost = settled_cost(ctx, outcome.candidate, outcome.usage)


def final_cost(ctx: Context) -> Decimal:
    """The cost the Generation row records and the spend counters are charged (the same figure for both): never
    more than the request's hold (a provider that bills above the worst case is charged the hold, and logged by
    BudgetMiddleware); with per-turn holds (budgets/turns.py), the sum of what the turns were charged."""
    outcome = ctx.outcome
    if outcome.cost or outcome.candidate is None:
        cost = outcome.cost if outcome.cost > 0 else Decimal(0)
    else:
        cost = settled_cost(ctx, outcome.candidate, outcome.usage)
    if ctx.extras.get(OWNED_BY_TURNS):
        return cost
    return within_hold(ctx, cost)


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


def _generations_batch_sql(conn, rows: list[Generation]) -> bytes:
    """PostgreSQL: the INSERT of `rows` as one statement text, its JSON parameter quoted as a literal."""
    sql, plan = _insert_plan(conn)
    batch = orjson.dumps([[getattr(row, name) for name in plan] for row in rows], default=str)
    return sql.replace("%s", "{}").encode().replace(b"{}", sql_literal(batch), 1)


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

        batch = deferred_statements()
        if batch is not None:
            batch.add(_generations_batch_sql(conn, rows))
            return
        sql, plan = _insert_plan(conn)
        values = orjson.dumps([[getattr(row, name) for name in plan] for row in rows], default=str).decode()
        conn.ensure_connection()
        # Server-side binding of the one parameter; no prepared statement (pgbouncer's transaction mode).
        with conn.wrap_database_errors, psycopg.Cursor(conn.connection) as cursor:
            cursor.execute(sql, [values], prepare=False)
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
