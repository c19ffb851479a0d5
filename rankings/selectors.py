"""The rankings query: top 50 public models per date bucket plus one `other` row, computed in the database
with a window function (ROW_NUMBER per bucket), not in Python loops."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db import connection
from django.db.models import Max

from rankings.filtered import MODALITY_COLUMNS, OTHER, filter_key, filtered_daily_sql
from rankings.models import TOP_N, AggregatedDay
from rankings.roomy_read import roomy_read

__all__ = ["MODALITY_COLUMNS", "OTHER", "RankingQuery", "last_aggregated_at", "rankings"]


@dataclass(frozen=True)
class RankingQuery:
    start_date: date
    end_date: date
    period: str  # day | week | month
    modality: str | None = None
    context_bucket: str | None = None
    category: str | None = None
    language_type: str | None = None

    @property
    def sampled(self) -> bool:
        return bool(self.category or self.language_type)


def _bucket_sql(column: str, period: str) -> str:
    """SQL of the period start of a DATE column."""
    if period == "day":
        return column
    if connection.vendor == "postgresql":
        return f"CAST(date_trunc('{period}', {column}) AS date)"
    if period == "week":
        return f"date({column}, '-' || ((CAST(strftime('%%w', {column}) AS integer) + 6) %% 7) || ' days')"
    return f"date({column}, 'start of month')"


def _source(query: RankingQuery) -> tuple[str, list]:
    """FROM/WHERE of the rows to rank, and its parameters."""
    if query.sampled:
        dimension, value = ("category", query.category) if query.category else ("language_type", query.language_type)
        return (
            "rankings_weeklysampledtokens WHERE dimension = %s AND value = %s"
            " AND week_start >= %s AND week_start <= %s",
            [dimension, value, query.start_date, query.end_date],
        )
    if not query.modality and not query.context_bucket:
        return "rankings_dailymodeltotal WHERE date >= %s AND date <= %s", [query.start_date, query.end_date]
    where, params = ["date >= %s", "date <= %s"], [query.start_date, query.end_date]
    if query.modality:
        where.append(f"{MODALITY_COLUMNS[query.modality]} = %s")
        params.append(True)
    if query.context_bucket:
        where.append("context_bucket = %s")
        params.append(query.context_bucket)
    return "rankings_dailymodeltokens WHERE " + " AND ".join(where), params


def _base_sql(query: RankingQuery, source: str) -> str:
    """One row per (bucket, model) with its tokens."""
    date_column = "week_start" if query.sampled else "date"
    bucket = _bucket_sql(date_column, query.period)
    return (
        f"SELECT {bucket} AS bucket, model_permaslug AS slug, SUM(total_tokens) AS tokens FROM {source} GROUP BY 1, 2"
    )


def _daily_totals_sql(collate: str) -> str:
    """The common query (period=day, no filter): ranks and long-tail sums stored at aggregation time."""
    return f"""
        SELECT bucket, slug, tokens, is_other FROM (
            SELECT date AS bucket, model_permaslug AS slug, total_tokens AS tokens, 0 AS is_other
            FROM rankings_dailymodeltotal WHERE date >= %s AND date <= %s AND position <= {TOP_N}
            UNION ALL
            SELECT date AS bucket, '{OTHER}' AS slug, total_tokens AS tokens, 1 AS is_other
            FROM rankings_dailylongtail WHERE date >= %s AND date <= %s AND total_tokens > 0
        ) AS cut
        ORDER BY bucket ASC, is_other ASC, tokens DESC, slug{collate} ASC
    """


def rankings(query: RankingQuery) -> list[dict]:
    """Rows {date, model_permaslug, total_tokens (str)} sorted by date, tokens desc, slug, `other` last."""
    source, params = _source(query)
    collate = ' COLLATE "C"' if connection.vendor == "postgresql" else ""
    if not query.sampled and query.period == "day":
        if not query.modality and not query.context_bucket:
            return _fetch(_daily_totals_sql(collate), params + params)
        # Filtered: the ranks stored at aggregation time (rankings/filtered.py).
        return _fetch(filtered_daily_sql(), [filter_key(query.modality, query.context_bucket), *params[:2]])
    sql = f"""
        WITH base AS ({_base_sql(query, source)}),
        ranked AS (
            SELECT bucket, slug, tokens,
                   ROW_NUMBER() OVER (PARTITION BY bucket ORDER BY tokens DESC, slug{collate} ASC) AS position
            FROM base
        )
        SELECT bucket, slug, tokens, is_other FROM (
            SELECT bucket, slug, tokens, 0 AS is_other FROM ranked WHERE position <= {TOP_N}
            UNION ALL
            SELECT bucket, '{OTHER}' AS slug, SUM(tokens) AS tokens, 1 AS is_other FROM ranked
            WHERE position > {TOP_N} GROUP BY bucket HAVING SUM(tokens) > 0
        ) AS cut
        ORDER BY bucket ASC, is_other ASC, tokens DESC, slug{collate} ASC
    """
    return _fetch(sql, params)


def _fetch(sql: str, params: list) -> list[dict]:
    with roomy_read("64MB"), connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        {"date": str(bucket)[:10], "model_permaslug": slug, "total_tokens": str(int(total))}
        for bucket, slug, total, _ in rows
    ]


def last_aggregated_at():
    return AggregatedDay.objects.aggregate(latest=Max("aggregated_at"))["latest"]
