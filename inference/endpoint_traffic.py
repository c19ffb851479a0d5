"""Uptime, latency and throughput of catalog endpoints, measured on this gateway's own traffic.

Every figure is aggregated in the database from the Generation rows of the endpoint (the endpoint that
answered each request) over a recent window ending now:

- uptime (`uptime_last_5m`, `uptime_last_30m`, `uptime_last_1d`): the share, in percent (0..100), of the
  window's requests to the endpoint that did not fail on the provider's side. A request is counted down when
  it failed with a 429 or a 5xx (or no status: the connection failed); cancelled requests (the client went
  away) and other failures (the request's own 4xx) are not counted either way. No counted request in the
  window: null. A request that failed over to another endpoint is recorded against the endpoint that
  answered, so failures an endpoint hid behind a fallback are not seen here.
- latency (`latency_last_30m`): percentiles p50, p75, p90, p99 of the time to first token (`ttft_ms`, in
  milliseconds) of the completed requests of the last 30 minutes.
- throughput (`throughput_last_30m`): percentiles of output tokens per second after the first token,
  `output_tokens / ((latency_ms - ttft_ms) / 1000)`, over the completed requests of the last 30 minutes that
  produced output after their first token.

No completed request in the window: latency and throughput are null. Each read is one grouped query per
figure for the endpoints asked about (indexed by endpoint and time), and a process keeps the figures of an
endpoint for TRAFFIC_TTL seconds (the popularity of models, a week's grouped read, for POPULARITY_TTL), so
a burst of catalog reads costs the database one aggregation.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from inference.models import Generation, GenerationStatus

WINDOWS = {"5m": timedelta(minutes=5), "30m": timedelta(minutes=30), "1d": timedelta(days=1)}
PERF_WINDOW = timedelta(minutes=30)
POPULARITY_WINDOW = timedelta(days=7)
PERCENTILES = (0.5, 0.75, 0.9, 0.99)
TRAFFIC_TTL = 30.0
POPULARITY_TTL = 60.0
SQLITE_SAMPLE = 5000  # the most recent values per endpoint read on SQLite, which has no percentile aggregate
DOWN = Q(status=GenerationStatus.FAILED) & (Q(error_code__isnull=True) | Q(error_code=429) | Q(error_code__gte=500))
COUNTED = ~Q(status=GenerationStatus.CANCELLED) & (
    ~Q(status=GenerationStatus.FAILED) | Q(error_code__isnull=True) | Q(error_code=429) | Q(error_code__gte=500)
)


@dataclass(slots=True)
class EndpointTraffic:
    uptime: dict[str, float | None]
    latency: dict[str, float] | None
    throughput: dict[str, float] | None


_traffic: dict[uuid.UUID, tuple[float, EndpointTraffic]] = {}  # endpoint id -> (expiry, figures)
_popularity: dict[str, tuple[float, dict[str, tuple[int, int]]]] = {}  # "week" -> (expiry, usage)


def clear_traffic_cache() -> None:
    """Forget the figures kept (tests: the database was reset under the process)."""
    _traffic.clear()
    _popularity.clear()


def _uptimes(ids: list[uuid.UUID], now: datetime) -> dict[uuid.UUID, dict[str, float | None]]:
    found: dict[uuid.UUID, dict[str, float | None]] = {i: dict.fromkeys(WINDOWS) for i in ids}
    oldest = now - max(WINDOWS.values())
    aggregates = {}
    for name, span in WINDOWS.items():
        recent = Q(created_at__gte=now - span)
        aggregates[f"counted_{name}"] = Count("id", filter=COUNTED & recent)
        aggregates[f"down_{name}"] = Count("id", filter=DOWN & recent)
    rows = (
        Generation.objects.filter(endpoint_id__in=ids, created_at__gte=oldest)
        .values("endpoint_id")
        .annotate(**aggregates)
    )
    for row in rows:
        for name in WINDOWS:
            counted, down = row[f"counted_{name}"], row[f"down_{name}"]
            found[row["endpoint_id"]][name] = round(100 * (counted - down) / counted, 2) if counted else None
    return found


def _percentiles_pg(column_sql: str, where_sql: str, ids: list[uuid.UUID], since: datetime) -> dict:
    fractions = ",".join(str(p) for p in PERCENTILES)
    sql = (
        f"SELECT endpoint_id, percentile_cont(ARRAY[{fractions}]) WITHIN GROUP (ORDER BY {column_sql}) "
        f"FROM {Generation._meta.db_table} WHERE endpoint_id = ANY(%s) AND created_at >= %s AND status = %s "
        f"AND {where_sql} GROUP BY endpoint_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [ids, since, GenerationStatus.COMPLETED])
        return {row[0]: _stats(row[1]) for row in cursor.fetchall()}


def _stats(values: list[float]) -> dict[str, float]:
    return {f"p{round(p * 100)}": round(float(v), 2) for p, v in zip(PERCENTILES, values, strict=True)}


def _interpolated(ordered: list[float]) -> list[float]:
    """Linear-interpolation percentiles of sorted values (what PostgreSQL's percentile_cont computes)."""
    out = []
    for p in PERCENTILES:
        rank = p * (len(ordered) - 1)
        low = int(rank)
        high = min(low + 1, len(ordered) - 1)
        out.append(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))
    return out


def _percentiles_sqlite(ids: list[uuid.UUID], since: datetime) -> tuple[dict, dict]:
    latency: dict[uuid.UUID, list[float]] = {}
    throughput: dict[uuid.UUID, list[float]] = {}
    for endpoint_id in ids:
        rows = (
            Generation.objects.filter(endpoint_id=endpoint_id, created_at__gte=since, status=GenerationStatus.COMPLETED)
            .exclude(ttft_ms__isnull=True)
            .order_by("-created_at")
            .values_list("ttft_ms", "latency_ms", "output_tokens")[:SQLITE_SAMPLE]
        )
        for ttft, total, tokens in rows:
            latency.setdefault(endpoint_id, []).append(float(ttft))
            if total is not None and total > ttft and tokens > 0:
                throughput.setdefault(endpoint_id, []).append(tokens * 1000 / (total - ttft))
    as_stats = lambda values: {k: _stats(_interpolated(sorted(v))) for k, v in values.items()}  # noqa: E731
    return as_stats(latency), as_stats(throughput)


def endpoint_traffic(
    endpoint_ids: Iterable[uuid.UUID], now: datetime | None = None
) -> dict[uuid.UUID, EndpointTraffic]:
    """Uptime over 5 minutes, 30 minutes and a day, latency and throughput over 30 minutes, per endpoint."""
    ids = list(dict.fromkeys(endpoint_ids))
    if not ids:
        return {}
    now = now or timezone.now()
    uptimes = _uptimes(ids, now)
    since = now - PERF_WINDOW
    if connection.vendor == "postgresql":
        latency = _percentiles_pg("ttft_ms", "ttft_ms IS NOT NULL", ids, since)
        throughput = _percentiles_pg(
            "output_tokens * 1000.0 / (latency_ms - ttft_ms)",
            "ttft_ms IS NOT NULL AND latency_ms > ttft_ms AND output_tokens > 0",
            ids,
            since,
        )
    else:
        latency, throughput = _percentiles_sqlite(ids, since)
    return {i: EndpointTraffic(uptimes[i], latency.get(i), throughput.get(i)) for i in ids}


def model_popularity() -> dict[str, tuple[int, int]]:
    """Model slug -> (requests, tokens in + out) of its completed requests of the last 7 days (kept
    POPULARITY_TTL seconds): the `most-popular` and `top-weekly` sorts of GET /models."""
    clock = time.monotonic()
    kept = _popularity.get("week")
    if kept is None or kept[0] <= clock:
        kept = (clock + POPULARITY_TTL, model_usage_since(timezone.now() - POPULARITY_WINDOW))
        _popularity["week"] = kept
    return kept[1]


def model_usage_since(since: datetime) -> dict[str, tuple[int, int]]:
    """Model slug -> (requests, tokens in + out) of its completed requests since `since`."""
    rows = (
        Generation.objects.filter(created_at__gte=since, status=GenerationStatus.COMPLETED)
        .exclude(model="")
        .values("model")
        .annotate(requests=Count("id"), tokens=Sum(F("input_tokens") + F("output_tokens")))
    )
    return {row["model"]: (row["requests"], row["tokens"] or 0) for row in rows}
