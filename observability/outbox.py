"""The outbox write of every recorded generation, and the end of its stored trace.

In the accounting transaction (`outbox_record`, receiver of `generation_recorded`; on PostgreSQL its insert is
sent with the batch's one query, inference/accounting.py `deferred_statements`): which destinations get a
delivery is decided from cheap facts only (enabled, key allowlist, region, sampling); the trace is built once,
cut to the size cap and encrypted (observability/bodies.py) into one TraceBody row, and each destination gets
a light OutboxEntry row (no copy of the trace). `filter_rules`, privacy mode, broadcast flags and the wire
format are applied by the delivery worker.

A TraceBody is deleted as soon as no delivery of its generation is pending or dead (`body_release`, run by
the worker after each finished delivery), and in any case after GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS
(`bodies_purge`, run by the worker every 10 minutes).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from inference.batch_statements import deferred_statements
from observability.bodies import IO_FIELDS, seal
from observability.conf import setting
from observability.models import DeliveryStatus, OutboxEntry, TraceBody
from observability.payload import base_trace, sampled
from observability.selectors import workspace_routes

logger = logging.getLogger("gateway.observability")

MIN_BODY_BYTES = 4096
_OUTBOX_COLUMNS = (
    "id",
    "destination_id",
    "generation_id",
    "include_io",
    "status",
    "attempts",
    "next_attempt_at",
    "last_error",
    "created_at",
)
_BODY_COLUMNS = ("generation_id", "data", "size", "truncated", "created_at")


def max_body_bytes() -> int:
    return max(MIN_BODY_BYTES, setting("GATEWAY_OBSERVABILITY_MAX_BODY_BYTES"))


_statements: dict[tuple[str, int], tuple[str, str, str]] = {}


def _statements_for(rows: int) -> tuple[str, str, str]:
    """(INSERT of one body, INSERT of `rows` outbox rows, both in one statement for PostgreSQL) for this
    connection, built once per shape."""
    key = (connection.alias, rows)
    if key not in _statements:
        ops = connection.ops

        def insert(model, columns, count):
            names = ", ".join(ops.quote_name(name) for name in columns)
            values = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * count)
            return f"INSERT INTO {ops.quote_name(model._meta.db_table)} ({names}) VALUES {values}"

        body, outbox = insert(TraceBody, _BODY_COLUMNS, 1), insert(OutboxEntry, _OUTBOX_COLUMNS, rows)
        _statements[key] = (body, outbox, f"WITH body AS ({body}) {outbox}")
    return _statements[key]


def _insert_outbox(rows: list[tuple[uuid.UUID, bool]], generation_id, body: tuple[str, int, bool], now) -> None:
    """The trace body and the outbox rows, without the ORM's per-instance overhead (this runs for every request
    with destinations): one statement on PostgreSQL (the body's INSERT in a CTE), two elsewhere."""
    native = connection.features.has_native_uuid_field
    if not isinstance(generation_id, uuid.UUID):
        generation_id = uuid.UUID(str(generation_id))
    when = connection.ops.adapt_datetimefield_value(now)
    generation = generation_id if native else generation_id.hex
    pending = DeliveryStatus.PENDING.value
    params: list = [generation, *body, when]
    for destination_id, include_io in rows:
        row_id = uuid.uuid4()
        params += [row_id if native else row_id.hex, destination_id if native else destination_id.hex]
        params += [generation, include_io, pending, 0, when, "", when]
    body_sql, outbox_sql, both = _statements_for(len(rows))
    if connection.vendor == "postgresql":
        batch = deferred_statements()
        if batch is not None:  # an accounting batch: sent with its insert and COMMIT, in a savepoint of its own
            batch.add(both, params, on_error=lambda error: _queue_failed(generation_id, error))
            return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(both, params)
            return
        cursor.execute(body_sql, params[:5])
        cursor.execute(outbox_sql, params[5:])


def _queue_failed(generation_id, error: Exception) -> None:
    logger.error("could not queue the traces of generation %s", generation_id, exc_info=error)


def outbox_record(*, generation, ctx) -> int:
    """Store the generation's trace once and queue one delivery per matching destination; returns how many.

    Runs inside the transaction that saves the Generation (receiver of `generation_recorded`), so a trace is
    queued exactly when its generation is recorded. Matching here: enabled, key allowlist, region, sampling
    (decided from a hash of the two ids); `filter_rules` are the worker's.
    """
    try:
        routes = workspace_routes(
            workspace_id=generation.workspace_id, policy_version=getattr(ctx, "policy_version", None)
        )
        if not routes:
            return 0
        rows = _matching_rows(routes, generation, ctx)
        if rows:
            record = base_trace(generation, ctx)
            if not any((include_io and not route.privacy_mode) or route.reads_io for route, include_io in rows):
                for name in IO_FIELDS:  # no destination receives or filters on them: never stored
                    record.pop(name, None)
            body = seal(record, max_body_bytes())
            outbox = [(route.id, io) for route, io in rows]
            if deferred_statements() is not None:  # PostgreSQL: in the batch's one query, in a savepoint of its own
                _insert_outbox(outbox, generation.id, body, timezone.now())
            else:
                with transaction.atomic():  # a savepoint: a failed insert must not take the Generation row with it
                    _insert_outbox(outbox, generation.id, body, timezone.now())
    except Exception:
        logger.exception("could not queue the traces of generation %s", generation.id)
        return 0
    return len(rows)


def _matching_rows(routes, generation, ctx) -> list:
    """(route, include_io) of each destination that receives this generation, before its filter rules."""
    rows = []
    region = getattr(ctx, "region", None) or "global"
    for route in routes:
        if route.api_key_hashes is not None and generation.key_hash not in route.api_key_hashes:
            continue
        if route.regions is not None and region not in route.regions:
            continue
        if not sampled(generation.id, route.id, route.sampling_rate):
            continue
        include_io = route.io_logging and sampled(generation.id, generation.workspace_id, route.io_sampling_rate)
        rows.append((route, include_io))
    return rows


def _waiting(generation_ref) -> Exists:
    return Exists(
        OutboxEntry.objects.filter(
            generation_id=generation_ref, status__in=[DeliveryStatus.PENDING, DeliveryStatus.DEAD]
        )
    )


def body_release(generation_id) -> int:
    """Delete the generation's trace body when none of its deliveries is pending or dead; returns 0 or 1.

    Run after a delivery is finished and committed: of two workers finishing the last two deliveries at once,
    the second to commit sees both finished, so a body is never left behind (the purge is the safety net)."""
    deleted, _ = TraceBody.objects.filter(pk=generation_id).exclude(_waiting(generation_id)).delete()
    return deleted


def bodies_purge(*, older_than) -> int:
    """Delete the bodies no delivery needs any more, and every body created before `older_than` (retention);
    returns how many. A pending or dead delivery whose body is gone goes dead when it is attempted."""
    unneeded, _ = TraceBody.objects.exclude(_waiting(OuterRef("pk"))).delete()
    expired, _ = TraceBody.objects.filter(created_at__lt=older_than).delete()
    return unneeded + expired


def body_retention() -> timedelta:
    return timedelta(days=setting("GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS"))


def trace_bodies_reencrypt() -> tuple[int, int]:
    """Re-encrypt every stored trace under the first encryption key (key rotation): (re-encrypted, unreadable).

    An unreadable one stays as it is; its deliveries go dead when attempted."""
    from gateway_project.encryption import DecryptionFailed, rotate_secret

    rotated = failed = 0
    for body in TraceBody.objects.only("generation_id", "data").iterator():
        try:
            token = rotate_secret(body.data)
        except DecryptionFailed:
            failed += 1
            continue
        TraceBody.objects.filter(pk=body.pk).update(data=token)
        rotated += 1
    return rotated, failed
