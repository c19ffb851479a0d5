"""Audit records of the data plane's refusals: a guardrail's 403 and a budget's 402.

Written after the refused answer went out (an `operations.measure.after_response` hook), group-committed like
the accounting rows (gateway_project/group_commit.py): refusals finishing within GATEWAY_ACCOUNTING_FLUSH_MS
are inserted in one statement on the data plane's database thread, retried while the database is
unreachable, and a failed batch falls back to row-by-row inserts.

Aggregated: one record per key, reason (`resource_type`, `resource_id`) and minute, whose `count` says how many
requests were refused so (the first one's status, message and request id are kept). A key hammering a spent
budget adds one row a minute, not one per request. Each batch also prunes the audit log past its retention
(audit/retention.py), at most once every PRUNE_EVERY seconds per process.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit.models import Action, AuditEvent, Source
from audit.recording import json_value
from audit.retention import prune_now_and_then
from gateway_project.db_thread import in_db_thread
from gateway_project.group_commit import GroupCommit, retry_while_unavailable

logger = logging.getLogger("gateway.audit")

REFUSED_RESOURCE = {402: "budget", 403: "guardrail"}


def _bucket(event: AuditEvent) -> tuple:
    return (event.organization_id, event.actor, event.resource_type, event.resource_id, event.minute)


def _add(event: AuditEvent, count: int) -> None:
    """Add `count` refusals to the record of `event`'s bucket, creating it when it is the minute's first."""
    organization_id, actor, resource_type, resource_id, minute = _bucket(event)
    same = AuditEvent.objects.filter(
        action=Action.REFUSE,
        organization_id=organization_id,
        actor=actor,
        resource_type=resource_type,
        resource_id=resource_id,
        minute=minute,
    )
    if same.update(count=F("count") + count):
        return
    event.count = count
    try:
        with transaction.atomic():
            event.save(force_insert=True)
    except IntegrityError:  # another process created the minute's record meanwhile
        same.update(count=F("count") + count)


def _insert(events: list[AuditEvent]) -> None:
    counts = Counter(_bucket(event) for event in events)
    first: dict[tuple, AuditEvent] = {}
    for event in events:
        first.setdefault(_bucket(event), event)
    for bucket, event in first.items():
        _add(event, counts[bucket])
    prune_now_and_then()


_insert_in_db_thread = in_db_thread(_insert)


async def _write_batch(events: list[AuditEvent]) -> None:
    await retry_while_unavailable(
        lambda: _insert_in_db_thread(events), seconds=settings.GATEWAY_ACCOUNTING_RETRY_SECONDS, what="audit records"
    )


async def _write_one(event: AuditEvent) -> None:
    await _insert_in_db_thread([event])


def _on_failure(event: AuditEvent) -> None:
    logger.error("audit record of refused request %s lost", event.request_id)


refusal_writer: GroupCommit[AuditEvent] = GroupCommit(
    write_batch=_write_batch,
    write_one=_write_one,
    flush_ms=lambda: settings.GATEWAY_ACCOUNTING_FLUSH_MS,
    on_failure=_on_failure,
)


def refusal_event(finished: Any) -> AuditEvent | None:
    """The audit record of a finished data-plane request, when it was refused by a guardrail or a budget."""
    resource = REFUSED_RESOURCE.get(finished.status)
    error, ctx = finished.error, finished.ctx
    if resource is None or error is None or ctx is None or ctx.principal is None or ctx.outcome.attempts:
        return None
    principal = ctx.principal
    metadata = error.metadata or {}
    now = timezone.now()
    return AuditEvent(
        organization_id=principal.organization_id,
        created_at=now,
        minute=now.replace(second=0, microsecond=0),
        source=Source.DATA_PLANE,
        actor_type="api_key",
        actor=principal.key_hash,
        actor_name=principal.key_name,
        resource_type=resource,
        resource_id=_refusing_id(resource, metadata),
        resource_label=((metadata.get("budget") or {}).get("name") or error.message)[:255],
        action=Action.REFUSE,
        changes={
            "status": finished.status,
            "message": error.message,
            "route": finished.route,
            "model": ctx.extras.get("inference.requested") or ctx.body.get("model") or "",
            "workspace_id": str(principal.workspace_id),
            "metadata": json_value(metadata),
        },
        request_id=ctx.request_id,
    )


def _refusing_id(resource: str, metadata: dict) -> str:
    """`workspace/daily` for a budget (scope and interval of the limit that refused); empty for a guardrail."""
    budget = metadata.get("budget") or {}
    if resource == "budget" and budget:
        return f"{budget.get('scope', '')}/{budget.get('interval', '')}"
    return ""


async def record_refusal(finished: Any) -> None:
    """after_response hook: queue the refusal's record and wait for its batch (the client has its answer)."""
    event = refusal_event(finished)
    if event is not None:
        await refusal_writer.submit(event)
