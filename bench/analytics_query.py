"""Latency of the usage analytics API and of /activity on a filled database, over HTTP.

    .venv/bin/python bench/analytics_query.py --url http://127.0.0.1:8000 [--url http://127.0.0.1:8001] \
        --key <management key> --start 2026-01-01T00:00:00Z --days 30 [--requests 50] [--shapes 0,1,4]

Run it against a gateway serving a database filled by `manage.py generate_demo_traffic` (docs/analytics.md).
Sends `--requests` sequential GETs of each query shape (30 days by model per day, the same per hour, by key
per week, one series per day, and /activity's first page: of the window, of everything, of one model, of one
model and status) and prints the median and 95th percentile wall time, with the number of entries returned
(/activity: its total_count). With several `--url` (e.g. the code before and after a change, serving the same
database) the requests of each shape alternate between them, so that both see the same machine load.
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
        ("activity, first page of everything", "/api/v1/activity", {}),
        ("activity, one model", "/api/v1/activity", {"model": "demo/model-0000"}),
        ("activity, one model and status (COUNT)", "/api/v1/activity", {**window, "model": "demo/model-0000",
                                                                          "status": "failed"}),
    ]  # fmt: skip


def _size(body: dict) -> int:
    return body["total_count"] if "total_count" in body else len(body["data"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, action="append", help="Gateway base URL (repeat to alternate)")
    parser.add_argument("--key", required=True)
    parser.add_argument("--start", required=True)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--shapes", help="Comma-separated indexes of the shapes to send (default: all)")
    args = parser.parse_args()
    start = datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    shapes = _shapes(start, args.days)
    if args.shapes:
        shapes = [shapes[int(i)] for i in args.shapes.split(",")]
    headers = {"Authorization": f"Bearer {args.key}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=300) for url in args.url]
    try:
        for name, path, params in shapes:
            times: list[list[float]] = [[] for _ in clients]
            sizes = []
            for client in clients:
                sizes.append(_size(client.get(path, params=params).raise_for_status().json()))  # warm up
            for _ in range(args.requests):
                for index, client in enumerate(clients):
                    began = time.perf_counter()
                    answer = client.get(path, params=params)
                    times[index].append((time.perf_counter() - began) * 1000)
                    answer.raise_for_status()
            for url, size, samples in zip(args.url, sizes, times, strict=True):
                p95 = statistics.quantiles(samples, n=20)[-1] if len(samples) > 1 else samples[0]
                where = f" [{url}]" if len(clients) > 1 else ""
                print(
                    f"{name:40} {size:9} entries  p50 {statistics.median(samples):8.1f} ms  p95 {p95:8.1f} ms{where}",
                    flush=True,
                )
    finally:
        for client in clients:
            client.close()


if __name__ == "__main__":
    main()
