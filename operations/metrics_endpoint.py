"""GET /metrics: the Prometheus text format, for a bearer token or an allowed client address.

Access (either is enough): `Authorization: Bearer <GATEWAY_METRICS_TOKEN>` (compared in constant time), or a
client address inside `GATEWAY_METRICS_ALLOWED_CIDRS` (default loopback only). Anything else is 401 (a token was
sent and is wrong, or one is required) or 403 in the error envelope. Behind a reverse proxy the client address
is the proxy's unless uvicorn runs with `--proxy-headers --forwarded-allow-ips`.

With `PROMETHEUS_MULTIPROC_DIR` the answer adds up every process's values (prometheus_client's multi-process
collector). The observability outbox's backlog and dead rows are counted in the database at scrape time (on
the health thread, within GATEWAY_HEALTH_TIMEOUT_SECONDS; left out of the answer when the database does not
answer).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import time

from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from gateway_project.api.errors import GatewayError
from operations import metrics
from operations.health import health_thread

logger = logging.getLogger("gateway.metrics")


def _allowed_networks() -> list:
    return [ipaddress.ip_network(cidr.strip(), strict=False) for cidr in settings.GATEWAY_METRICS_ALLOWED_CIDRS if cidr]


def access_error(scope) -> GatewayError | None:
    """None when the scrape may proceed; else the 401/403 to answer."""
    token = settings.GATEWAY_METRICS_TOKEN
    sent = ""
    for name, value in scope["headers"]:
        if name == b"authorization":
            sent = value.decode("latin-1")
    if token and sent.startswith("Bearer ") and hmac.compare_digest(sent[7:].strip().encode(), token.encode()):
        return None
    if sent:
        return GatewayError(401, "Invalid metrics token", headers={"WWW-Authenticate": "Bearer"})
    client = (scope.get("client") or ("", 0))[0]
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        address = None
    if address is not None and any(address in network for network in _allowed_networks()):
        return None
    if token:
        return GatewayError(401, "Missing metrics token", headers={"WWW-Authenticate": "Bearer"})
    return GatewayError(403, f"Metrics are not served to {client or 'this client'} (GATEWAY_METRICS_ALLOWED_CIDRS)")


def _outbox_counts() -> dict[str, tuple[int, float]]:
    """Pending and dead outbox rows with the age in seconds of the oldest one, on the health thread."""
    from django.db.models import Count, Min
    from django.utils import timezone

    from observability.models import DeliveryStatus, OutboxEntry

    rows = (
        OutboxEntry.objects.filter(status__in=[DeliveryStatus.PENDING, DeliveryStatus.DEAD])
        .values("status")
        .annotate(count=Count("id"), oldest=Min("created_at"))
    )
    now = timezone.now()
    return {row["status"]: (row["count"], (now - row["oldest"]).total_seconds()) for row in rows}


class OutboxCollector:
    """Scrape-time gauges of the outbox, from counts fetched just before `generate_latest`."""

    def __init__(self, counts: dict[str, tuple[int, float]]) -> None:
        self.counts = counts

    def collect(self):
        rows = GaugeMetricFamily(
            "gateway_outbox_rows",
            "Observability outbox rows waiting for delivery (pending) or given up (dead)",
            labels=["status"],
        )
        age = GaugeMetricFamily(
            "gateway_outbox_oldest_age_seconds", "Age of the oldest pending or dead outbox row", labels=["status"]
        )
        for status in ("pending", "dead"):
            count, oldest = self.counts.get(status, (0, 0.0))
            rows.add_metric([status], count)
            age.add_metric([status], oldest)
        yield rows
        yield age


async def _scrape_registry() -> CollectorRegistry:
    metrics.sample_queues(force=True)
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    try:
        counts = await asyncio.wait_for(health_thread.run(_outbox_counts), settings.GATEWAY_HEALTH_TIMEOUT_SECONDS)
    except Exception as error:  # the scrape still answers with the process metrics
        logger.warning("metrics: outbox counts unavailable: %s", type(error).__name__)
        return registry
    combined = CollectorRegistry(auto_describe=False)
    combined.register(_Forward(registry))
    combined.register(OutboxCollector(counts))
    return combined


class _Forward:
    def __init__(self, registry) -> None:
        self.registry = registry

    def collect(self):
        yield from self.registry.collect()


async def metrics_app(scope, receive, send) -> None:
    """ASGI application for GET /metrics."""
    error = None
    if scope["method"] not in ("GET", "HEAD"):
        error = GatewayError(405, f'Method "{scope["method"]}" not allowed', headers={"Allow": "GET, HEAD"})
    else:
        error = access_error(scope)
    if error is not None:
        import orjson

        headers = [(b"content-type", b"application/json")]
        headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
        await send({"type": "http.response.start", "status": error.status, "headers": headers})
        await send({"type": "http.response.body", "body": orjson.dumps(error.envelope())})
        return
    started = time.perf_counter()
    accept = next((v.decode("latin-1") for n, v in scope["headers"] if n == b"accept"), "")
    encoder, content_type = choose_encoder(accept)  # the text format 0.0.4 unless OpenMetrics is asked for
    body = encoder(await _scrape_registry())
    logger.debug("metrics scrape took %.1f ms", (time.perf_counter() - started) * 1000)
    headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
