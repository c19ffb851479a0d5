"""Drive the ASGI application in-process (no sockets) to measure or profile the gateway's own cost.

    KEY=<inference key> MODEL=bench/fake STREAM=false N=2000 C=1 [PROFILE=1|cpu] python bench/inprocess.py
    KEY=<inference key> ENDPOINT=/api/v1/embeddings BODY='{"model":"echo/echo-embed-1","input":"Say hello"}' ...

PROFILE=cpu profiles the main thread's CPU time instead of wall time; PROXY_HEADERS=1 wraps the application
in uvicorn's proxy-headers middleware (what uvicorn adds unless --no-proxy-headers) to measure its cost.
Prints requests/s and the p50 time until the last response byte was sent (accounting runs after it), and
exits with status 1 naming the statuses when any answer was not a 2xx (an upstream not running, a catalog row
another script pointed at its own upstream port: bench/prepare.py writes `bench/fake`'s base URL from
UPSTREAM_PORT). Use the same DATABASE_URL / REDIS_URL as bench/prepare.py; the upstream of MODEL must be running.
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

from gateway_project.asgi import application

if os.environ.get("PROXY_HEADERS") == "1":  # what uvicorn adds unless --no-proxy-headers (its default: on)
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    application = ProxyHeadersMiddleware(application, trusted_hosts="127.0.0.1")

KEY = os.environ["KEY"].encode()
MODEL = os.environ.get("MODEL", "bench/fake").encode()
STREAM = os.environ.get("STREAM", "false").encode()
BODY = os.environ.get("BODY", "").encode() or b'{"model":"%s","input":"Say hello","stream":%s}' % (MODEL, STREAM)
ENDPOINT = os.environ.get("ENDPOINT", "/api/v1/responses")
LATENCIES: list[float] = []
STATUSES: dict[int, int] = {}


async def one() -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": ENDPOINT,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer " + KEY)],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
    }
    done = asyncio.Event()
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            STATUSES[message["status"]] = STATUSES.get(message["status"], 0) + 1
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    started = time.perf_counter()
    task = asyncio.ensure_future(application(scope, receive, send))
    await done.wait()
    LATENCIES.append(time.perf_counter() - started)
    await task


async def main(total: int, concurrency: int) -> None:
    for _ in range(20):
        await one()
    LATENCIES.clear()

    async def worker():
        for _ in range(total // concurrency):
            await one()

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    LATENCIES.sort()
    print(
        f"{total} requests, concurrency {concurrency}: {total / elapsed:.0f} req/s, "
        f"p50 until last byte {LATENCIES[len(LATENCIES) // 2] * 1e6:.0f} us, "
        f"CPU {cpu / total * 1e6:.0f} us/request (this process, all threads)"
    )


if __name__ == "__main__":
    import uvloop

    total, concurrency = int(os.environ.get("N", "2000")), int(os.environ.get("C", "1"))
    if os.environ.get("PROFILE"):
        profile = cProfile.Profile(time.thread_time) if os.environ.get("PROFILE") == "cpu" else cProfile.Profile()
        profile.enable()
        uvloop.run(main(total, concurrency))
        profile.disable()
        pstats.Stats(profile).sort_stats(os.environ.get("SORT", "tottime")).print_stats(
            int(os.environ.get("LINES", "40"))
        )
    else:
        uvloop.run(main(total, concurrency))
    failed = {status: count for status, count in STATUSES.items() if not 200 <= status < 300}
    if failed:
        sys.exit(f"answers that were not 2xx (status: count): {failed}; all: {STATUSES}")
