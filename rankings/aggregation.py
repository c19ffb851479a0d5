"""Rolling Generation rows of public models up into the rankings tables.

One UTC day at a time: the database groups the day's rows (an index range scan on created_at) by model,
context bucket, modalities and tool use; the few grouped rows are written in one transaction that first
deletes what an earlier run wrote for that day, so re-running a day gives the same rows (idempotent).
The sampled dataset is rebuilt for the ISO week containing the day. `AggregatedDay` records finished days
(resumable ranges, and `meta.as_of`). Cache hits (`Generation.cache_hit`, docs/cache.md) are left out: no model
processed them.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BigIntegerField, Case, Count, F, Sum, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from inference.models import Generation, Model
from rankings.classification import classify_pending
from rankings.filtered import rank_filtered_days
from rankings.models import (
    TOP_N,
    AggregatedDay,
    DailyModelTokens,
    DailyModelTotal,
    SampledDimension,
    WeeklySampledTokens,
)
from rankings.roomy_read import roomy_read

CONTEXT_BUCKETS = ((1_000, "1K"), (10_000, "10K"), (100_000, "100K"), (1_000_000, "1M"))
LARGEST_BUCKET = "10M"


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def week_start_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def sample_rate() -> float:
    return float(settings.GATEWAY_RANKINGS_SAMPLE_RATE)


def _public_models() -> dict[str, str]:
    """slug → canonical slug of every public model."""
    return dict(Model.objects.filter(public=True).values_list("slug", "canonical_slug"))


def _context_bucket():
    whens = [When(input_tokens__lte=limit, then=Value(name)) for limit, name in CONTEXT_BUCKETS]
    return Case(*whens, default=Value(LARGEST_BUCKET))


def _permaslug(row: dict, public: dict[str, str]) -> str:
    return row["model_permaslug"] or public[row["model"]]


def _tokens():
    return Sum(Cast(F("input_tokens"), BigIntegerField()) + Cast(F("output_tokens"), BigIntegerField()))


def _daily_rows(day: date, public: dict[str, str]) -> list[DailyModelTokens]:
    start, end = day_bounds(day)
    grouped = (
        Generation.objects.filter(created_at__gte=start, created_at__lt=end, model__in=list(public), cache_hit=False)
        .annotate(bucket=_context_bucket(), tool=Case(When(tool_calls__gt=0, then=Value(True)), default=Value(False)))
        .values("model", "model_permaslug", "bucket", "tool", "input_modalities", "output_modalities")
        .annotate(tokens=_tokens(), requests=Count("id"))
        .order_by()
    )
    merged: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    with roomy_read("256MB", jit=False):  # on PostgreSQL the day's GROUP BY hashes in memory, not on disk
        grouped = list(grouped)
    for row in grouped:
        inputs = set(row["input_modalities"] or ["text"])
        outputs = set(row["output_modalities"] or ["text"])
        key = (
            _permaslug(row, public),
            row["bucket"],
            "text" in outputs,
            "image" in outputs,
            "image" in inputs,
            "audio" in inputs,
            bool(row["tool"]),
        )
        merged[key][0] += int(row["tokens"] or 0)
        merged[key][1] += int(row["requests"])
    return [
        DailyModelTokens(
            date=day,
            model_permaslug=slug,
            context_bucket=bucket,
            output_text=out_text,
            output_image=out_image,
            input_image=in_image,
            input_audio=in_audio,
            tool_calling=tool,
            total_tokens=tokens,
            requests=requests,
        )
        for (slug, bucket, out_text, out_image, in_image, in_audio, tool), (tokens, requests) in merged.items()
    ]


def _weekly_sampled_rows(week: date, public: dict[str, str]) -> list[WeeklySampledTokens]:
    start, _ = day_bounds(week)
    end = start + timedelta(days=7)
    grouped = (
        Generation.objects.filter(
            created_at__gte=start, created_at__lt=end, model__in=list(public), category__isnull=False, cache_hit=False
        )
        .values("model", "model_permaslug", "category", "language_type")
        .annotate(tokens=_tokens())
        .order_by()
    )
    sums: dict[tuple[str, str, str], int] = defaultdict(int)
    for row in grouped:
        slug = _permaslug(row, public)
        tokens = int(row["tokens"] or 0)
        sums[(slug, SampledDimension.CATEGORY, row["category"])] += tokens
        if row["language_type"]:
            sums[(slug, SampledDimension.LANGUAGE_TYPE, row["language_type"])] += tokens
    rate = sample_rate()
    return [
        WeeklySampledTokens(
            week_start=week,
            model_permaslug=slug,
            dimension=dimension,
            value=value,
            sampled_tokens=tokens,
            total_tokens=round(tokens / rate),
        )
        for (slug, dimension, value), tokens in sums.items()
    ]


def aggregate_exact_day(day: date, public: dict[str, str] | None = None) -> int:
    """Recompute the exact-dataset rows of one UTC day. Returns the number of generations of that day."""
    public = _public_models() if public is None else public
    rows = _daily_rows(day, public)
    totals: dict[str, int] = defaultdict(int)
    for row in rows:
        totals[row.model_permaslug] += row.total_tokens
    generations = sum(r.requests for r in rows)
    with transaction.atomic():
        DailyModelTokens.objects.filter(date=day).delete()
        DailyModelTotal.objects.filter(date=day).delete()
        DailyModelTokens.objects.bulk_create(rows, batch_size=2000)
        DailyModelTotal.objects.bulk_create(
            [DailyModelTotal(date=day, model_permaslug=slug, total_tokens=t) for slug, t in totals.items()],
            batch_size=2000,
        )
        rank_daily_totals(day)
        AggregatedDay.objects.update_or_create(
            date=day, defaults={"aggregated_at": timezone.now(), "generations": generations}
        )
    return generations


def rank_daily_totals(day: date) -> None:
    """Store each model's rank within the day and the long tail's sum (computed in the database with a window
    function), so the unfiltered daily query reads 50 rows and one sum per day; the same for every filter
    (modality, context bucket) from the day's split rows (rankings/filtered.py)."""
    collate = '"C"' if connection.vendor == "postgresql" else "BINARY"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE rankings_dailymodeltotal SET position = ranked.position
            FROM (
                SELECT id, ROW_NUMBER() OVER (ORDER BY total_tokens DESC, model_permaslug COLLATE {collate}) AS position
                FROM rankings_dailymodeltotal WHERE date = %s
            ) AS ranked
            WHERE rankings_dailymodeltotal.id = ranked.id
            """,
            [day],
        )
        cursor.execute("DELETE FROM rankings_dailylongtail WHERE date = %s", [day])
        cursor.execute(
            f"""
            INSERT INTO rankings_dailylongtail (date, total_tokens)
            SELECT date, SUM(total_tokens) FROM rankings_dailymodeltotal
            WHERE date = %s AND position > {TOP_N} GROUP BY date
            """,
            [day],
        )
    rank_filtered_days(day, day)


def aggregate_sampled_week(week: date, public: dict[str, str] | None = None) -> None:
    """Recompute the sampled-dataset rows of the ISO week starting on `week` (a Monday), after classifying the
    sampled generations still pending (rankings/classification.py)."""
    classify_pending()
    public = _public_models() if public is None else public
    rows = _weekly_sampled_rows(week, public)
    with transaction.atomic():
        WeeklySampledTokens.objects.filter(week_start=week).delete()
        WeeklySampledTokens.objects.bulk_create(rows, batch_size=2000)


def aggregate_day(day: date) -> int:
    """Recompute one UTC day: its exact rows and the sampled rows of its ISO week."""
    public = _public_models()
    generations = aggregate_exact_day(day, public)
    aggregate_sampled_week(week_start_of(day), public)
    return generations


def is_complete(day: date, marker: AggregatedDay | None) -> bool:
    """A day aggregated after it ended needs no re-run when resuming a range."""
    return marker is not None and marker.aggregated_at >= day_bounds(day)[1]
