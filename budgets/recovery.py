"""The Generation row of a request whose process died: rebuilt from its spend hold by the reaper.

A hold's reservation row carries, besides the amount, what the request's row needs (`record`, written by the
hold's own statement: organization, workspace, key, user, the model asked for and the first candidate, the wire
format, whether it streamed). When `counters.reservations_reap` charges an expired hold at its amount, it calls
`record_interrupted` in the same transaction: the request gets its row, status `interrupted`, cost the hold,
`usage_estimated` true, so the counters and the rows agree. A request with several holds (per-turn holds) gets
one row, its cost the sum of its reaped holds. A request that did write its row (its process died, or lost the
database, between the row and the settlement) keeps that row; reconciliation counts the reaped hold for it.
A request whose own row could not be written (the database unreachable for longer than
`GATEWAY_ACCOUNTING_RETRY_SECONDS`) leaves its hold unsettled on purpose: it is reaped the same way.
If the request was alive after all (its process lost the database for longer than the TTL) and settles later,
its own row replaces the interrupted one (inference/accounting.py `insert_generations`) and its settlement
replaces the reaped charge by its cost.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db.models import F

from metering.cost import units_to_usd

logger = logging.getLogger("gateway.budgets")


def hold_record(ctx) -> dict:
    """What a rebuilt row needs, from the request's context (sent with the hold: a few dozen bytes)."""
    principal = ctx.principal
    candidates = ctx.candidates or ()
    first = candidates[0] if candidates else None
    return {  # UUIDs as they are: orjson writes them (counter_sql.record_json)
        "org": principal.organization_id,
        "ws": principal.workspace_id,
        "key": principal.key_id,
        "kh": principal.key_hash,
        "user": principal.user_id,
        "model": str(ctx.body.get("model") or "")[:200],
        "served": first.model_slug if first else "",
        "fmt": ctx.ingress_format,
        "stream": ctx.stream,
        "region": ctx.region,
    }


def _request_uuid(request_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(request_id)
    except (TypeError, ValueError):
        return None


def record_interrupted(
    *, request_id: str, amount_units: int, record: dict | None, created_at: datetime, now: datetime
) -> bool:
    """Write (or add to) the `interrupted` row of the request of a reaped hold; False when there is none to write
    (no request id or record: a hold of the previous release; or the request's own row exists)."""
    from inference.accounting import unsaved_generation
    from inference.models import Generation, GenerationStatus
    from inference.signals import generations_recorded

    row_id = _request_uuid(request_id)
    if row_id is None or not record or not record.get("org"):
        logger.warning("reaped hold of request %r has no record: charged without a Generation row", request_id)
        return False
    cost = units_to_usd(amount_units)
    rows = Generation.objects.filter(id=row_id)
    if rows.filter(status=GenerationStatus.INTERRUPTED).update(cost=F("cost") + cost, completed_at=now):
        return True
    if rows.exists():
        return False
    row = unsaved_generation(
        id=row_id,
        organization_id=uuid.UUID(record["org"]),
        workspace_id=record.get("ws"),
        api_key_id=record.get("key"),
        key_hash=record.get("kh") or "",
        user_id=record.get("user"),
        session_id="",
        requested_model=record.get("model") or "",
        model=record.get("served") or "",
        model_permaslug="",
        provider="",
        endpoint_id=None,
        upstream_id="",
        status=GenerationStatus.INTERRUPTED,
        finish_reason="",
        error_code=None,
        error_message="its process stopped before the request finished: charged its hold",
        input_tokens=0,
        output_tokens=0,
        cached_tokens=0,
        reasoning_tokens=0,
        cost=cost,
        reported_cost=None,
        usage_estimated=True,
        cache_hit=False,
        is_byok=False,
        streamed=bool(record.get("stream")),
        ingress_format=record.get("fmt") or "responses",
        latency_ms=None,
        ttft_ms=None,
        tool_calls=0,
        input_modalities=["text"],
        output_modalities=["text"],
        context_bucket="",
        pipeline=[],
        trace={},
        metadata={},
        created_at=created_at,
        completed_at=now,
        category=None,
        language_type=None,
        data_region=record.get("region") or "",
        http_referer="",  # not carried by the hold (kept small): the rebuilt row has no client headers
        user_agent="",
        client_metadata={},
    )
    Generation.objects.bulk_create([row])
    generations_recorded.send(sender=Generation, generations=[row])  # the usage rollups
    return True
