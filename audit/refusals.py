"""Audit records of the data plane's refusals: a guardrail's 403 and a budget's 402.

Written after the refused answer went out (an `operations.measure.after_response` hook), group-committed like
the accounting rows (gateway_project/group_commit.py): refusals finishing within GATEWAY_ACCOUNTING_FLUSH_MS
are inserted in one statement on the data plane's database thread, retried while the database is
unreachable, and a failed batch falls back to row-by-row inserts.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils import timezone

from audit.models import Action, AuditEvent, Source
from audit.recording import json_value
from gateway_project.db_thread import in_db_thread
from gateway_project.group_commit import GroupCommit, retry_while_unavailable

logger = logging.getLogger("gateway.audit")

REFUSED_RESOURCE = {402: "budget", 403: "guardrail"}


def _insert(events: list[AuditEvent]) -> None:
    AuditEvent.objects.bulk_create(events)


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
    return AuditEvent(
        organization_id=principal.organization_id,
        created_at=timezone.now(),
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
