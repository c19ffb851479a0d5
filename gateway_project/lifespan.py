"""ASGI lifespan of the gateway: on shutdown, wait until every inference request's accounting is written.

uvicorn, on SIGTERM, stops accepting connections, lets in-flight responses finish for up to
`--timeout-graceful-shutdown` seconds, then cancels what is still running and sends `lifespan.shutdown`.
A cancelled stream still records its Generation row (AccountingMiddleware's `finally`), but that write
needs the event loop to keep running: without this handler the loop stops right after the cancellation
and the rows of the cut streams are lost. Here shutdown waits (at most GATEWAY_SHUTDOWN_DRAIN_SECONDS)
until no inference request is in progress, accounting and budget settlement included (a request counts
until both are written; a write whose request was cancelled a second time counts while it is queued), then
closes the upstream client session and the accounting writer's database connection. Serve with
`--lifespan on`.
"""

from __future__ import annotations

import asyncio
import logging
import time

from django.conf import settings

logger = logging.getLogger("gateway.lifespan")


def _in_progress() -> int:
    """Requests still running, plus queued writes whose request stopped waiting (cancelled a second time)."""
    from budgets.settler import settler
    from inference.consumers import responses_consumer
    from inference.recorder import writer
    from operations.measure import active

    # `active`: requests whose answer is sent but whose after-response work (metrics, refusal audit) runs
    return responses_consumer.active + writer.in_flight() + settler.in_flight() + active.count


async def drain(timeout: float) -> int:
    """Wait until the data plane has no request or queued write in progress; the number left when time ran out."""
    deadline = time.monotonic() + timeout
    while _in_progress() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return _in_progress()


async def close_clients() -> None:
    from gateway_project import db_thread
    from inference import recorder
    from inference.providers.http import close_session
    from operations.health import health_thread

    await close_session()
    await asyncio.to_thread(recorder.shutdown)
    await asyncio.to_thread(db_thread.shutdown)
    await asyncio.to_thread(health_thread.shutdown)


def _metrics_process_exit() -> None:
    """Multi-process metrics: this worker's live gauges (open streams, queue depths) stop counting."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


async def lifespan(scope, receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            left = await drain(settings.GATEWAY_SHUTDOWN_DRAIN_SECONDS)
            if left:
                logger.error("shutdown: %d request(s) or queued write(s) still running after the drain time", left)
            _metrics_process_exit()
            try:
                await close_clients()
            except Exception:
                logger.exception("shutdown: closing the upstream session or the accounting writer failed")
            await send({"type": "lifespan.shutdown.complete"})
            return
