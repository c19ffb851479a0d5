"""The filtered daily rankings (`modality` and/or `context_bucket`), ranked at aggregation time.

For every day and every filter (5 modalities, 5 context buckets, and the 25 pairs) the top 50 models and one
`other` row with the sum of the rest are stored in `DailyFilteredTop` with their position (1..50, 51 for
`other`), so GET /datasets/rankings-daily with a filter and period=day reads at most 51 rows per day through
an index instead of grouping and ranking the split table at request time. Computed in the database from the
day's `DailyModelTokens` rows (one INSERT ... SELECT per day range, valid on PostgreSQL and SQLite).
"""

from __future__ import annotations

from datetime import date

from django.db import connection

from rankings.models import TOP_N

OTHER = "other"
MODALITY_COLUMNS = {
    "text": "output_text",
    "image_output": "output_image",
    "image": "input_image",
    "audio": "input_audio",
    "tool_calling": "tool_calling",
}
CONTEXT_BUCKET_NAMES = ("1K", "10K", "100K", "1M", "10M")


def filter_key(modality: str | None, context_bucket: str | None) -> str:
    """The stored key of a filter: "m=text", "c=10K" or "m=text&c=10K"."""
    parts = ([f"m={modality}"] if modality else []) + ([f"c={context_bucket}"] if context_bucket else [])
    return "&".join(parts)


def _filters() -> list[tuple[str, str | None, str | None]]:
    """(key, modality, context bucket) of every filter."""
    modalities: list[str | None] = [None, *MODALITY_COLUMNS]
    buckets: list[str | None] = [None, *CONTEXT_BUCKET_NAMES]
    return [(filter_key(m, b), m, b) for m in modalities for b in buckets if m or b]


def _keyed_sql() -> str:
    """(date, filter key, model, tokens) of every filter a split row matches, summed per model."""
    keys = " UNION ALL ".join(
        f"SELECT '{key}' AS filter_key, '{m or ''}' AS modality, '{b or ''}' AS context_bucket"
        for key, m, b in _filters()
    )
    modality_match = " OR ".join(f"(k.modality = '{name}' AND t.{column})" for name, column in MODALITY_COLUMNS.items())
    return f"""
        SELECT t.date AS date, k.filter_key AS filter_key, t.model_permaslug AS slug, SUM(t.total_tokens) AS tokens
        FROM rankings_dailymodeltokens t
        JOIN ({keys}) AS k
          ON (k.modality = '' OR {modality_match}) AND (k.context_bucket = '' OR k.context_bucket = t.context_bucket)
        WHERE t.date >= %s AND t.date <= %s
        GROUP BY t.date, k.filter_key, t.model_permaslug
    """


def rank_filtered_days(first: date, last: date) -> None:
    """Recompute the stored filtered rankings of the days first..last from their split rows."""
    collate = '"C"' if connection.vendor == "postgresql" else "BINARY"
    ranked = f"""
        SELECT date, filter_key, slug, tokens, ROW_NUMBER() OVER (
            PARTITION BY date, filter_key ORDER BY tokens DESC, slug COLLATE {collate}
        ) AS position
        FROM ({_keyed_sql()}) AS keyed
    """
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM rankings_dailyfilteredtop WHERE date >= %s AND date <= %s", [first, last])
        cursor.execute(
            f"""
            INSERT INTO rankings_dailyfilteredtop (date, filter_key, model_permaslug, total_tokens, position)
            SELECT date, filter_key, slug, tokens, position FROM ({ranked}) AS top WHERE position <= {TOP_N}
            UNION ALL
            SELECT date, filter_key, '{OTHER}', SUM(tokens), {TOP_N + 1} FROM ({ranked}) AS rest
            WHERE position > {TOP_N} GROUP BY date, filter_key HAVING SUM(tokens) > 0
            """,
            [first, last, first, last],
        )


def filtered_daily_sql() -> str:
    """The rows of one filter over a date range, in the endpoint's order (position: tokens desc, slug, other)."""
    return """
        SELECT date, model_permaslug, total_tokens, 0 FROM rankings_dailyfilteredtop
        WHERE filter_key = %s AND date >= %s AND date <= %s ORDER BY date ASC, position ASC
    """
