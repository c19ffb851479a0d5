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

The kernel does not import the apps (docs/architecture.md): each app says what shutdown waits for and what it
closes with `on_shutdown(...)` in its AppConfig.ready() (inference: requests and accounting writes in progress,
the upstream session, the writer; budgets: settlement writes; operations: measured requests, the health thread).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from django.conf import settings

logger = logging.getLogger("gateway.lifespan")


_in_progress_counters: list[Callable[[], int]] = []
_closers: list[Callable[[], Awaitable[None]]] = []


def on_shutdown(
    *, in_progress: Callable[[], int] | None = None, close: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Register an app's part of the shutdown (call it in AppConfig.ready()): `in_progress()` counts the requests
    or queued writes shutdown waits for; `close()` releases a client once they are done (in registration order)."""
    if in_progress is not None and in_progress not in _in_progress_counters:
        _in_progress_counters.append(in_progress)
    if close is not None and close not in _closers:
        _closers.append(close)


def _in_progress() -> int:
    """Requests still running, plus queued writes whose request stopped waiting (cancelled a second time)."""
    return sum(count() for count in _in_progress_counters)


async def drain(timeout: float) -> int:
    """Wait until the data plane has no request or queued write in progress; the number left when time ran out."""
    deadline = time.monotonic() + timeout
    while _in_progress() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return _in_progress()


async def close_clients() -> None:
    from gateway_project import db_thread

    for close in _closers:
        await close()
    await asyncio.to_thread(db_thread.shutdown)


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
