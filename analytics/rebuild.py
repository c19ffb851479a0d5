"""Rebuilding the usage rollups from Generation rows (manage.py rollup_usage; generate_demo_traffic).

For a range of whole UTC days: the hourly rollup rows of those days are deleted and recomputed by the database
(one GROUP BY per dimension and day over the `(organization, created_at)` index), then the daily rows of the day
are recomputed as the sums of those hourly rows (one GROUP BY), in one transaction per day. Meant for closed
days (backfill after an upgrade, repair after a failed upsert, demo data): a generation written while its own
day is being rebuilt may be counted twice or not at all.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Case, Count, DecimalField, IntegerField, Q, Sum, Value, When
from django.db.models.functions import Coalesce, TruncDay, TruncHour

from analytics.histogram import BIN_FIELDS, bin_range
from analytics.models import UsageDailyRollup, UsageRollup
from analytics.rollup import DIMENSION_SOURCES, FAILED, SUMS, UTC
from inference.models import Generation

_ZERO = Value(0)


def _bin_condition(index: int) -> Q:
    lower, upper = bin_range(index)
    condition = Q(latency_ms__gte=lower)
    return condition & Q(latency_ms__lt=upper) if upper is not None else condition


def _aggregates() -> dict:
    counts = {
        name: Coalesce(Sum(Case(When(_bin_condition(i), then=1), default=0, output_field=IntegerField())), _ZERO)
        for i, name in enumerate(BIN_FIELDS)
    }
    return {
        "requests": Count("id"),
        "errors": Count("id", filter=Q(status=FAILED)),
        "prompt_tokens": Coalesce(Sum("input_tokens"), _ZERO),
        "completion_tokens": Coalesce(Sum("output_tokens"), _ZERO),
        "reasoning_tokens": Coalesce(Sum("reasoning_tokens"), _ZERO),
        "cached_tokens": Coalesce(Sum("cached_tokens"), _ZERO),
        "cost_sum": Coalesce(Sum("cost"), Value(0, output_field=DecimalField(max_digits=24, decimal_places=10))),
        **counts,
    }


def _text(value) -> str:
    return "" if value is None else str(value)[:200]


def rebuild_day(day: date) -> int:
    """Recompute every organization's rollups of one UTC day; returns the number of rollup rows written."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    end = start + timedelta(days=1)
    rows = Generation.objects.filter(created_at__gte=start, created_at__lt=end)
    aggregates = _aggregates()
    written = 0
    with transaction.atomic():
        UsageRollup.objects.filter(bucket__gte=start, bucket__lt=end).delete()
        for dimension, attribute in DIMENSION_SOURCES.items():
            grouped = (
                rows.annotate(hour=TruncHour("created_at", tzinfo=UTC))
                .values("organization_id", "hour", attribute)
                .annotate(**aggregates)
                .order_by()
            )
            batch = [
                UsageRollup(
                    organization_id=item.pop("organization_id"),
                    bucket=item.pop("hour"),
                    dimension=dimension.value,
                    value=_text(item.pop(attribute)),
                    cost=item.pop("cost_sum"),
                    **item,
                )
                for item in grouped.iterator(chunk_size=5000)
            ]
            UsageRollup.objects.bulk_create(batch, batch_size=2000)
            written += len(batch)
        written += rebuild_daily(start, end)
    return written


def rebuild_daily(start: datetime, end: datetime) -> int:
    """Recompute the daily rollups of the whole UTC days in [start, end) as the sums of their hourly rows;
    returns the number of daily rows written. Call it inside a transaction (rebuild_day does)."""
    UsageDailyRollup.objects.filter(bucket__gte=start, bucket__lt=end).delete()
    grouped = (
        UsageRollup.objects.filter(bucket__gte=start, bucket__lt=end)
        .values("organization_id", "dimension", "value", day=TruncDay("bucket", tzinfo=UTC))
        .annotate(**{f"sum_{name}": Sum(name) for name in SUMS + BIN_FIELDS})
        .order_by()
    )
    batch = [
        UsageDailyRollup(
            organization_id=item["organization_id"],
            bucket=item["day"],
            dimension=item["dimension"],
            value=item["value"],
            **{name: item[f"sum_{name}"] for name in SUMS + BIN_FIELDS},
        )
        for item in grouped.iterator(chunk_size=5000)
    ]
    UsageDailyRollup.objects.bulk_create(batch, batch_size=2000)
    return len(batch)
