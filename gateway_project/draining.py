"""Leaving a load balancer's rotation before stopping: the drain that precedes uvicorn's graceful shutdown.

A replica that closed its listening socket the moment it got SIGTERM would refuse the requests a balancer
still sends it until its next health check, and would close idle keep-alive connections on which the balancer
may just have sent a request ("server disconnected without sending a response"). So on SIGTERM the server
served by `python -m gateway_project.serve` (DrainingServer) first:

1. marks the process draining: `GET /health/ready` answers 503 at once (operations/health.py), and every
   response carries `Connection: close` (uvicorn's default headers, no per-request work): each keep-alive
   connection is closed by the server after its next answer, so the client (balancer) opens its next one
   elsewhere;
2. keeps accepting and serving for `GATEWAY_DRAIN_SECONDS` (default 10: longer than a balancer's health-check
   interval times the failures it needs to mark a server down);
3. then runs uvicorn's graceful shutdown: stops accepting, lets requests and streams in flight finish (at most
   `--timeout-graceful-shutdown` seconds), and the ASGI lifespan (gateway_project/lifespan.py) waits for the
   accounting rows and settlements still queued, and flushes the metrics, before the process exits 0.

SIGINT (Ctrl-C in a terminal, `make run`) skips the drain: a developer's server stops at once, gracefully. A
second SIGTERM during the drain ends the drain early (graceful shutdown at once); SIGINT during the graceful
shutdown forces the exit (uvicorn's behaviour).
"""

from __future__ import annotations

import logging
import signal
import time
from types import FrameType

from uvicorn.server import Server

logger = logging.getLogger("gateway.drain")

CONNECTION_CLOSE = (b"connection", b"close")


class DrainState:
    """Whether this process is leaving rotation, and since when (time.monotonic())."""

    __slots__ = ("since",)

    def __init__(self) -> None:
        self.since: float | None = None

    @property
    def draining(self) -> bool:
        return self.since is not None


state = DrainState()


def drain_seconds() -> float:
    from django.conf import settings

    return max(float(settings.GATEWAY_DRAIN_SECONDS), 0.0)


class DrainingServer(Server):
    """uvicorn's Server with the drain above before its graceful shutdown, and exit status 0 after a SIGTERM it
    completed (uvicorn re-raises the signal it handled, so the process would end 143)."""

    drain_until: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and not self.should_exit and self.drain_until is None:
            seconds = drain_seconds()
            if seconds > 0:
                self.begin_drain(seconds)
                return
        if sig != signal.SIGTERM:
            self._captured_signals.append(sig)
        if state.since is None:
            state.since = time.monotonic()  # readiness answers 503 during the graceful shutdown too
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True

    def begin_drain(self, seconds: float) -> None:
        now = time.monotonic()
        state.since = now
        self.drain_until = now + seconds
        self.server_state.default_headers = [*self.server_state.default_headers, CONNECTION_CLOSE]
        logger.warning("SIGTERM: draining for %g s (readiness 503, connections closed after each answer)", seconds)

    async def on_tick(self, counter: int) -> bool:
        should_exit = await super().on_tick(counter)
        if self.drain_until is not None:
            if CONNECTION_CLOSE not in self.server_state.default_headers:  # the once-a-second refresh dropped it
                self.server_state.default_headers = [*self.server_state.default_headers, CONNECTION_CLOSE]
            if not self.should_exit and time.monotonic() >= self.drain_until:
                logger.warning("drain over: stop accepting, finish the requests in flight")
                self.should_exit = True
                return True
        return should_exit
