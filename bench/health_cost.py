"""Cost of GET /health/live and GET /health/ready, driving the ASGI application in-process (no sockets).

    .venv/bin/python bench/health_cost.py     # a fresh SQLite file in /tmp; DATABASE_URL to measure another

Prints p50 / p99 latency and CPU time per call (the readiness check after migrations were seen applied once:
one `SELECT 1` on the health thread, plus Redis PING when REDIS_URL is set).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/gateway-health-bench.sqlite3")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from operations.health import health_app  # noqa: E402


async def drive(path: str, n: int) -> None:
    scope = {"type": "http", "method": "GET", "path": path, "headers": []}

    async def send(message) -> None:
        return None

    await health_app(scope, None, send)  # first call: migration graph, connection
    latencies = []
    cpu = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        await health_app(scope, None, send)
        latencies.append(time.perf_counter() - started)
    cpu = (time.process_time() - cpu) / n
    latencies.sort()
    p50, p99 = latencies[n // 2] * 1e6, latencies[int(n * 0.99)] * 1e6
    print(f"{path}: p50 {p50:.0f} us, p99 {p99:.0f} us, CPU {cpu * 1e6:.0f} us per call")


def main() -> None:
    call_command("migrate", verbosity=0)
    asyncio.run(drive("/health/live", 5000))
    asyncio.run(drive("/health/ready", 2000))


if __name__ == "__main__":
    main()
