"""Latency of the usage analytics API on a filled database, over HTTP.

    .venv/bin/python bench/analytics_query.py --url http://127.0.0.1:8000 --key <management key> \
        --start 2026-01-01T00:00:00Z --days 30 [--requests 50]

Run it against a gateway serving a database filled by `manage.py generate_demo_traffic` (docs/analytics.md).
Sends `--requests` sequential GETs of each query shape (30 days by model per day, the same per hour, by key
per week, one series per day, and /activity's first page) and prints the median and 95th percentile wall
time, with the number of entries returned.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timedelta

import httpx


def _shapes(start: datetime, days: int) -> list[tuple[str, str, dict]]:
    end = start + timedelta(days=days)
    window = {"start": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "end": end.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return [
        (f"{days} days by model, per day", "/api/v1/analytics/usage", {**window, "group_by": "model"}),
        (
            f"{days} days by model, per hour",
            "/api/v1/analytics/usage",
            {**window, "group_by": "model", "granularity": "hour"},
        ),
        (
            f"{days} days by key, per week",
            "/api/v1/analytics/usage",
            {**window, "group_by": "key", "granularity": "week"},
        ),
        (f"{days} days, one series per day", "/api/v1/analytics/usage", window),
        ("activity, first page of the window", "/api/v1/activity", window),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--start", required=True)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    start = datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    with httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {args.key}"}, timeout=120) as client:
        for name, path, params in _shapes(start, args.days):
            client.get(path, params=params).raise_for_status()  # warm up
            times = []
            for _ in range(args.requests):
                began = time.perf_counter()
                answer = client.get(path, params=params)
                times.append((time.perf_counter() - began) * 1000)
                answer.raise_for_status()
            entries = len(answer.json()["data"])
            p95 = statistics.quantiles(times, n=20)[-1]
            print(f"{name:40} {entries:6} entries  p50 {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
