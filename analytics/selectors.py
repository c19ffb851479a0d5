"""Reads of the usage rollups: series per time bucket and group, with p50/p95 latency from the histograms."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from django.db.models import F, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncMonth, TruncWeek

from accounts.models import ApiKey, User, Workspace
from analytics.histogram import BIN_FIELDS, percentile
from analytics.models import Dimension, UsageRollup
from analytics.rollup import SUMS, UTC
from inference.models import Generation

TRUNCATE = {"day": TruncDay, "week": TruncWeek, "month": TruncMonth}


@dataclass(frozen=True)
class UsageQuery:
    organization_id: uuid.UUID
    start: datetime
    end: datetime
    granularity: str  # hour | day | week | month
    group_by: str | None  # a Dimension value, or None for one series


def _period(granularity: str):
    if granularity == "hour":
        return F("bucket")
    return TRUNCATE[granularity]("bucket", tzinfo=UTC)


def usage_series(query: UsageQuery) -> list[dict]:
    """One entry per (bucket, group) that had traffic, by bucket then group.

    Without `group_by` the status rows are summed (every generation has exactly one status), so a bucket's
    totals are those of all its generations."""
    dimension = query.group_by or Dimension.STATUS
    rows = (
        UsageRollup.objects.filter(
            organization_id=query.organization_id, dimension=dimension, bucket__gte=query.start, bucket__lt=query.end
        )
        .annotate(period=_period(query.granularity))
        .values("period", *(("value",) if query.group_by else ()))
        .annotate(**{f"sum_{name}": Sum(name) for name in SUMS + BIN_FIELDS})
        .order_by("period", *(("value",) if query.group_by else ()))
    )
    series = [_entry(row, query.group_by) for row in rows]
    if query.group_by:
        labels = group_labels(query.organization_id, query.group_by, {e["group"] for e in series})
        for entry in series:
            entry["label"] = labels.get(entry["group"], entry["group"])
    return series


def _entry(row: dict, group_by: str | None) -> dict:
    requests = row["sum_requests"] or 0
    errors = row["sum_errors"] or 0
    histogram = [row[f"sum_{name}"] or 0 for name in BIN_FIELDS]
    return {
        "bucket": row["period"],
        "group": row["value"] if group_by else None,
        "label": None,
        "requests": requests,
        "errors": errors,
        "error_rate": errors / requests if requests else 0.0,
        "prompt_tokens": row["sum_prompt_tokens"] or 0,
        "completion_tokens": row["sum_completion_tokens"] or 0,
        "reasoning_tokens": row["sum_reasoning_tokens"] or 0,
        "cached_tokens": row["sum_cached_tokens"] or 0,
        "cost": row["sum_cost"] or 0,
        "latency_p50_ms": percentile(histogram, 0.5),
        "latency_p95_ms": percentile(histogram, 0.95),
    }


def _uuids(values: set[str]) -> list[uuid.UUID]:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(value))
        except ValueError:
            continue
    return found


def group_labels(organization_id: uuid.UUID, group_by: str, values: set[str]) -> dict[str, str]:
    """Readable names of key hashes (key name), workspace ids (slug) and user ids (email or username)."""
    if group_by == Dimension.KEY:
        rows = ApiKey.objects.filter(organization_id=organization_id, hash__in=values).values_list("hash", "name")
        return dict(rows)
    if group_by == Dimension.WORKSPACE:
        rows = Workspace.objects.filter(organization_id=organization_id, id__in=_uuids(values))
        return {str(w.id): w.slug for w in rows.only("id", "slug")}
    if group_by == Dimension.USER:
        users = User.objects.filter(organization_id=organization_id, id__in=_uuids(values))
        return {str(u.id): u.email or u.username for u in users.only("id", "email", "username")}
    return {}


ACTIVITY_FILTERS = {
    "start": "created_at__gte",
    "end": "created_at__lt",
    "model": "model",
    "provider": "provider",
    "status": "status",
    "api_key_hash": "key_hash",
    "workspace_id": "workspace_id",
    "user_id": "user_id",
}


def activity_list(*, organization_id: uuid.UUID, filters: dict) -> QuerySet[Generation]:
    """The organization's Generation rows, newest first, narrowed by ActivityQuerySerializer's data."""
    lookups = {ACTIVITY_FILTERS[name]: value for name, value in filters.items() if name in ACTIVITY_FILTERS}
    day = filters.get("date")
    if day is not None:
        start = datetime.combine(day, time.min, tzinfo=UTC)
        lookups.update(created_at__gte=start, created_at__lt=start + timedelta(days=1))
    return Generation.objects.filter(organization_id=organization_id, **lookups).order_by("-created_at", "-id")
