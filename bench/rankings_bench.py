"""Rankings benchmark: aggregation throughput and endpoint latency on PostgreSQL.

Usage (a scratch PostgreSQL database; it is migrated and filled, never a production one):
    DATABASE_STATEMENT_TIMEOUT_MS=0 DATABASE_URL=postgres://postgres@127.0.0.1:5432/rankings_bench \
      .venv/bin/python bench/rankings_bench.py --days 3 --per-day 1000000 --models 2000

1. generate_demo_traffic writes DAYS x PER_DAY Generation rows over MODELS public models;
2. aggregate_rankings rolls them up; the time per day and per million generations is printed, and
   extrapolated to a year;
3. the rankings tables are filled with a year of daily totals for MODELS models (365 x MODELS rows, plus
   the split table, and the filtered ranks of rankings/filtered.py), and GET /api/v1/datasets/rankings-daily
   (30 days: no filter, modality, context_bucket, both, and modality by week) is timed over 50 requests
   through Django's test client (p50 and p95, rate limits off), and the query alone (p50 of 20 calls).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

FILL_YEAR = """
DELETE FROM rankings_dailymodeltotal WHERE model_permaslug LIKE 'bench/%%';
DELETE FROM rankings_dailymodeltokens WHERE model_permaslug LIKE 'bench/%%';
INSERT INTO rankings_dailymodeltotal (date, model_permaslug, total_tokens, position)
SELECT d::date, 'bench/model-' || lpad(m::text, 4, '0'), (1e9 / (m + 1) * (0.5 + random()))::bigint, 0
FROM generate_series(%(end)s::date - 364, %(end)s::date, interval '1 day') AS d, generate_series(0, %(k)s - 1) AS m
ON CONFLICT DO NOTHING;
INSERT INTO rankings_dailymodeltokens (date, model_permaslug, context_bucket, output_text, output_image,
    input_image, input_audio, tool_calling, total_tokens, requests)
SELECT date, model_permaslug, b, true, false, false, false, b = '10K', total_tokens / 2, 1
FROM rankings_dailymodeltotal, unnest(ARRAY['1K', '10K']) AS b WHERE model_permaslug LIKE 'bench/%%';
UPDATE rankings_dailymodeltotal SET position = ranked.position FROM (
    SELECT id, ROW_NUMBER() OVER (PARTITION BY date ORDER BY total_tokens DESC, model_permaslug COLLATE "C") AS position
    FROM rankings_dailymodeltotal) AS ranked
WHERE rankings_dailymodeltotal.id = ranked.id;
DELETE FROM rankings_dailylongtail;
INSERT INTO rankings_dailylongtail (date, total_tokens)
SELECT date, SUM(total_tokens) FROM rankings_dailymodeltotal WHERE position > 50 GROUP BY date;
ANALYZE;
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--per-day", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--query-only", action="store_true", help="Skip generation and aggregation")
    parser.add_argument("--no-fill", action="store_true", help="Time the requests on the year filled by a past run")
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("run this against PostgreSQL (DATABASE_URL=postgres://...)")
    call_command("migrate", verbosity=0)
    call_command("bootstrap", verbosity=0, json=True)
    if not args.query_only:
        measure_aggregation(args)
    measure_query(args)


def measure_aggregation(args) -> None:
    started = time.perf_counter()
    call_command(
        "generate_demo_traffic",
        days=args.days,
        per_day=args.per_day,
        models=args.models,
        until="2026-06-30",
        verbosity=0,
    )
    print(f"generated {args.days} x {args.per_day} generations in {time.perf_counter() - started:.1f} s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE inference_generation")
    started = time.perf_counter()
    call_command(
        "aggregate_rankings", since=f"2026-06-{31 - args.days:02d}", until="2026-06-30", force=True, no_progress=True
    )
    elapsed = time.perf_counter() - started
    per_day = elapsed / args.days
    print(
        f"aggregated {args.days} days in {elapsed:.1f} s: {per_day:.1f} s per day of {args.per_day} "
        f"generations; a year at this rate: {per_day * 365 / 60:.1f} min"
    )


def measure_query(args) -> None:
    if not args.no_fill:
        fill_year(args)
    time_requests(args)


def fill_year(args) -> None:
    from datetime import date, timedelta

    with connection.cursor() as cursor:
        cursor.execute(FILL_YEAR, {"end": "2026-06-30", "k": args.models})

    try:
        from rankings.filtered import rank_filtered_days
    except ImportError:  # a checkout from before the filtered ranks (for a before/after comparison)
        rank_filtered_days = None
    if rank_filtered_days is None:
        return
    started, end = time.perf_counter(), date(2026, 6, 30)
    for offset in range(364, -1, -7):  # a week at a time, as a year of daily aggregations would
        rank_filtered_days(end - timedelta(days=offset), min(end, end - timedelta(days=offset - 6)))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rankings_dailyfilteredtop")
    print(f"ranked a year of filtered views (35 filters) in {time.perf_counter() - started:.1f} s")


def time_requests(args) -> None:
    from django.test import override_settings

    from accounts.models import ApiKey
    from accounts.services import api_key_create

    key = api_key_create(organization=ApiKey.objects.first().organization, name="bench").raw_key
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    with override_settings(REDIS_URL=""):
        from rankings import rate_limits

        rate_limits.PER_KEY_PER_MINUTE = rate_limits.PER_ORG_PER_DAY = 10**9
        for label, extra in (
            ("no filter", {}),
            ("modality=text", {"modality": "text"}),
            ("context_bucket=10K", {"context_bucket": "10K"}),
            ("modality=tool_calling&context_bucket=10K", {"modality": "tool_calling", "context_bucket": "10K"}),
            ("modality=text, period=week", {"modality": "text", "period": "week"}),
        ):
            times = []
            for _ in range(50):
                t0 = time.perf_counter()
                response = client.get(
                    "/api/v1/datasets/rankings-daily", {"start_date": "2026-05-31", "end_date": "2026-06-30", **extra}
                )
                times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200, response.content[:200]
            rows = len(response.json()["data"])
            times.sort()
            query = selector_p50(extra)
            print(
                f"GET rankings-daily 30 days, {args.models} models, {label}: p50 {statistics.median(times):.1f} ms, "
                f"p95 {times[int(len(times) * 0.95) - 1]:.1f} ms, {rows} rows; the query alone p50 {query:.1f} ms"
            )


def selector_p50(extra: dict) -> float:
    """p50 of the rankings query alone (rankings.selectors.rankings), without the HTTP request around it."""
    from datetime import date

    from rankings.selectors import RankingQuery, rankings

    query = RankingQuery(start_date=date(2026, 5, 31), end_date=date(2026, 6, 30), **{"period": "day", **extra})
    times = []
    for _ in range(20):
        started = time.perf_counter()
        rankings(query)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


if __name__ == "__main__":
    main()
