"""SSE keep-alive: a comment line written while a stream request's upstream is silent.

`keep_alive(responder, interval, headers)` runs beside a streamed request: whenever nothing was written
for `interval` seconds (GATEWAY_SSE_KEEPALIVE_SECONDS, default 15; 0 turns it off) it writes
`: keep-alive` — an SSE comment every client ignores — so proxies and load balancers do not cut a long
silence (a reasoning model thinking, a slow first token). When the upstream has not answered yet, the
first keep-alive starts the 200 event stream; routing can still fall back to another provider afterwards
(nothing but comments went out), and an error is then written as the format's in-stream error event.
The only per-write cost is the responder storing the time of its last write.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

COMMENT = b": keep-alive\n\n"


async def keep_alive(responder: Any, interval: float, headers: list[tuple[bytes, bytes]]) -> None:
    while not responder.complete:
        wait = interval - (time.monotonic() - responder.last_write)
        if wait > 0:
            await asyncio.sleep(wait)
            continue
        if not responder.started:
            await responder.start(200, headers)
        if not responder.complete:
            await responder.body(COMMENT, more=True)
