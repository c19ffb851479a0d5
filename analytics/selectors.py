"""Reads of the usage rollups: series per time bucket and group, with p50/p95 latency from the histograms;
the Generation rows of /activity and their total count."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from django.db.models import BigIntegerField, CharField, F, QuerySet, Sum
from django.db.models.functions import Cast, TruncDay, TruncMonth, TruncWeek

from accounts.models import ApiKey, User, Workspace
from analytics.histogram import BIN_FIELDS, percentiles
from analytics.models import Dimension, UsageDailyRollup, UsageRollup
from analytics.rollup import SUMS, UTC
from inference.models import Generation

TRUNCATE = {"day": TruncDay, "week": TruncWeek, "month": TruncMonth}
DAY = timedelta(days=1)
_BIGINT = BigIntegerField()


@dataclass(frozen=True)
class UsageQuery:
    organization_id: uuid.UUID
    start: datetime
    end: datetime
    granularity: str  # hour | day | week | month
    group_by: str | None  # a Dimension value, or None for one series


def _next_day(moment: datetime) -> datetime:
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day if day == moment else day + DAY


def _day_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def tiers(start: datetime, end: datetime, granularity: str) -> list[tuple[type, datetime, datetime]]:
    """The rollup tier and range to read for each part of [start, end): the daily tier for the whole UTC days,
    the hourly tier for the hours before the first and after the last whole day (and for granularity=hour)."""
    first, last = _next_day(start), _day_start(end)
    if granularity == "hour" or first >= last:
        return [(UsageRollup, start, end)]
    parts = [(UsageRollup, start, first)] if start < first else []
    parts.append((UsageDailyRollup, first, last))
    if last < end:
        parts.append((UsageRollup, last, end))
    return parts


def _read(model, query: UsageQuery, dimension: str, start: datetime, end: datetime) -> list[tuple]:
    """Rows (period, value or None, *SUMS, *BIN_FIELDS) of one tier over [start, end), by period then value."""
    rows = model.objects.filter(
        organization_id=query.organization_id, dimension=dimension, bucket__gte=start, bucket__lt=end
    )
    native = (query.granularity, model) in (("hour", UsageRollup), ("day", UsageDailyRollup))
    if native and query.group_by:
        # One stored row per (bucket, value): read in the order of the unique index, nothing to sum or sort. The
        # bucket is read as text and parsed once per distinct value (the driver's time-zone-aware timestamp
        # loader cost more than the query on thousands of rows).
        texts = rows.order_by("bucket", "value").values_list(Cast("bucket", CharField()), "value", *SUMS, *BIN_FIELDS)
        moments: dict[str, datetime] = {}
        found = []
        for text, *rest in texts:
            moment = moments.get(text)
            if moment is None:
                moment = moments[text] = _parse_bucket(text)
            found.append((moment, *rest))
        return found
    period = F("bucket") if native else TRUNCATE[query.granularity]("bucket", tzinfo=UTC)
    keys = ("period", "value") if query.group_by else ("period",)
    sums = {f"sum_{name}": Sum(name) if name == "cost" else Cast(Sum(name), _BIGINT) for name in SUMS + BIN_FIELDS}
    grouped = rows.annotate(period=period).values(*keys).annotate(**sums).order_by(*keys)
    names = [f"sum_{name}" for name in SUMS + BIN_FIELDS]
    if query.group_by:
        return list(grouped.values_list("period", "value", *names))
    return [(row[0], None, *row[1:]) for row in grouped.values_list("period", *names)]


def _parse_bucket(text: str) -> datetime:
    """A bucket read as text: `2026-10-28 00:00:00+00` (PostgreSQL) or `2026-10-28 00:00:00` (SQLite, UTC)."""
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _merge(parts: list[list[tuple]]) -> list[tuple]:
    """Rows of several tiers summed per (period, value): a week or month may span daily and hourly parts."""
    totals: dict[tuple, list] = {}
    for rows in parts:
        for period, value, *sums in rows:
            into = totals.get((period, value))
            if into is None:
                totals[(period, value)] = sums
            else:
                for index, amount in enumerate(sums):
                    into[index] = (into[index] or 0) + (amount or 0)
    return [(period, value, *totals[(period, value)]) for period, value in sorted(totals, key=_order)]


def _order(key: tuple) -> tuple:
    return key[0], key[1] or ""


def usage_series(query: UsageQuery) -> list[dict]:
    """One entry per (bucket, group) that had traffic, by bucket then group.

    Whole UTC days are read from the daily tier (granularity day, week, month), the other hours from the hourly
    tier. Without `group_by` the status rows are summed (every generation has exactly one status), so a bucket's
    totals are those of all its generations."""
    dimension = query.group_by or Dimension.STATUS
    parts = [
        _read(model, query, dimension, start, end)
        for model, start, end in tiers(query.start, query.end, query.granularity)
    ]
    rows = parts[0] if len(parts) == 1 else _merge(parts)
    series = [_entry(row) for row in rows]
    if query.group_by:
        labels = group_labels(query.organization_id, query.group_by, {e["group"] for e in series})
        for entry in series:
            entry["label"] = labels.get(entry["group"], entry["group"])
    return series


_REQUESTS, _ERRORS, _PROMPT, _COMPLETION, _REASONING, _CACHED, _COST = range(2, 2 + len(SUMS))
_BINS = slice(2 + len(SUMS), 2 + len(SUMS) + len(BIN_FIELDS))


def _entry(row: tuple) -> dict:
    requests = row[_REQUESTS] or 0
    errors = row[_ERRORS] or 0
    p50, p95 = percentiles([count or 0 for count in row[_BINS]], 0.5, 0.95)
    return {
        "bucket": row[0],
        "group": row[1],
        "label": None,
        "requests": requests,
        "errors": errors,
        "error_rate": errors / requests if requests else 0.0,
        "prompt_tokens": row[_PROMPT] or 0,
        "completion_tokens": row[_COMPLETION] or 0,
        "reasoning_tokens": row[_REASONING] or 0,
        "cached_tokens": row[_CACHED] or 0,
        "cost": row[_COST] or 0,
        "latency_p50_ms": p50,
        "latency_p95_ms": p95,
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


# /activity filters that are rollup dimensions: a total over whole hours with at most one of them is read from
# the rollups (the same figures as `requests` of /analytics/usage), not counted over the Generation rows.
DIMENSION_FILTERS = {
    "model": Dimension.MODEL,
    "provider": Dimension.PROVIDER,
    "status": Dimension.STATUS,
    "api_key_hash": Dimension.KEY,
    "workspace_id": Dimension.WORKSPACE,
    "user_id": Dimension.USER,
}
HOUR = timedelta(hours=1)


def _bounds(filters: dict) -> tuple[datetime | None, datetime | None]:
    day = filters.get("date")
    if day is not None:
        start = datetime.combine(day, time.min, tzinfo=UTC)
        return start, start + DAY
    return filters.get("start"), filters.get("end")


def _hour_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def activity_count(*, organization_id: uuid.UUID, filters: dict) -> int:
    """The number of rows `activity_list` returns, exactly, without counting millions of rows.

    With at most one dimension filter (model, provider, status, key, workspace, user) the whole hours of the range
    are summed from the rollups (daily rows for whole UTC days, hourly rows for the other hours) and only the
    rows of the partial hours at the ends of the range are counted. Any other combination is counted over the
    rows (`COUNT(*)`)."""
    dimensions = [(DIMENSION_FILTERS[name], value) for name, value in filters.items() if name in DIMENSION_FILTERS]
    if len(dimensions) > 1:
        return activity_list(organization_id=organization_id, filters=filters).count()
    dimension, value = dimensions[0] if dimensions else (Dimension.STATUS, None)
    start, end = _bounds(filters)
    counted = 0
    if start is not None and _hour_start(start) != start:
        boundary = _hour_start(start) + HOUR
        if end is not None and end <= boundary:
            return activity_list(organization_id=organization_id, filters=filters).count()
        counted += _rows_between(organization_id, filters, start, boundary)
        start = boundary
    if end is not None and _hour_start(end) != end:
        boundary = _hour_start(end)
        counted += _rows_between(organization_id, filters, boundary, end)
        end = boundary
    if start is not None and end is not None and start >= end:
        return counted
    return counted + _rolled_up_requests(organization_id, dimension, value, start, end)


def _rows_between(organization_id: uuid.UUID, filters: dict, start: datetime, end: datetime) -> int:
    narrowed = {name: value for name, value in filters.items() if name not in ("start", "end", "date")}
    return activity_list(organization_id=organization_id, filters={**narrowed, "start": start, "end": end}).count()


def _rolled_up_requests(organization_id, dimension: str, value, start: datetime | None, end: datetime | None) -> int:
    """Generations of [start, end) (whole hours; None: unbounded) from the rollups of one dimension."""
    first = None if start is None else _next_day(start)
    last = None if end is None else _day_start(end)
    if first is not None and last is not None and first >= last:
        parts = [(UsageRollup, start, end)]
    else:
        parts = [(UsageDailyRollup, first, last)]
        if start is not None and start < first:
            parts.append((UsageRollup, start, first))
        if end is not None and last < end:
            parts.append((UsageRollup, last, end))
    total = 0
    for model, low, high in parts:
        rows = model.objects.filter(organization_id=organization_id, dimension=dimension)
        if value is not None:
            rows = rows.filter(value=str(value))
        if low is not None:
            rows = rows.filter(bucket__gte=low)
        if high is not None:
            rows = rows.filter(bucket__lt=high)
        total += rows.aggregate(n=Cast(Sum("requests"), _BIGINT))["n"] or 0
    return total
