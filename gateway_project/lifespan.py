"""ASGI lifespan of the gateway: on shutdown, wait until every inference request's accounting is written.

uvicorn, on SIGTERM, stops accepting connections, lets in-flight responses finish for up to
`--timeout-graceful-shutdown` seconds, then cancels what is still running and sends `lifespan.shutdown`.
A cancelled stream still records its Generation row (AccountingMiddleware's `finally`), but that write
needs the event loop to keep running: without this handler the loop stops right after the cancellation
and the rows of the cut streams are lost. Here shutdown waits (at most GATEWAY_SHUTDOWN_DRAIN_SECONDS)
until no inference request is in progress, accounting included, then closes the upstream client
session and the accounting writer's database connection. Serve with `--lifespan on`.
"""

from __future__ import annotations

import asyncio
import logging
import time

from django.conf import settings

logger = logging.getLogger("gateway.lifespan")


async def drain(timeout: float) -> int:
    """Wait until the data plane has no request in progress; the number still running when time ran out."""
    from inference.consumers import responses_consumer

    deadline = time.monotonic() + timeout
    while responses_consumer.active and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return responses_consumer.active


async def close_clients() -> None:
    from inference import recorder
    from inference.providers.http import close_session

    await close_session()
    await asyncio.to_thread(recorder.shutdown)


async def lifespan(scope, receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            left = await drain(settings.GATEWAY_SHUTDOWN_DRAIN_SECONDS)
            if left:
                logger.error("shutdown: %d inference request(s) still running after the drain time", left)
            try:
                await close_clients()
            except Exception:
                logger.exception("shutdown: closing the upstream session or the accounting writer failed")
            await send({"type": "lifespan.shutdown.complete"})
            return
