"""Measuring the data plane: an ASGI wrapper per data-plane route and a pipeline middleware.

`measured(app, route)` wraps a data-plane route's ASGI application (gateway_project/asgi.py wraps every route
of `inference.asgi_routes.http_routes`). It notes the status the answer started with, counts the answer as an
open stream while a `text/event-stream` body is being sent, and once the application returns it records the
request (operations/metrics.py) with the time of the last byte sent. `MetricsMiddleware`, the outermost
inference middleware, only hands the request's Context to the wrapper (through a context variable the
request's task inherits), so model, provider, ingress format, attempts, tokens and cost come from what the
pipeline already recorded. Requests refused before a Context exists (400, 413) are counted with model and
provider `none`.
"""

from __future__ import annotations

import contextvars
import logging
import time

from operations import metrics

logger = logging.getLogger("gateway.metrics")


class _Slot:
    __slots__ = ("ctx",)

    def __init__(self) -> None:
        self.ctx = None


_current: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("gateway_metrics_slot", default=None)


class _Active:
    """Measured requests not recorded yet (tests wait for 0: the record is made after the last byte is sent)."""

    count = 0


active = _Active()


class MetricsMiddleware:
    """Outermost inference middleware: lets the route's wrapper see the Context."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx) -> None:
        slot = _current.get()
        if slot is not None:
            slot.ctx = ctx
        await self.get_response(ctx)


def measured(app, route: str):
    """`app` with its requests recorded under the label `route`."""

    async def measured_app(scope, receive, send) -> None:
        started = time.perf_counter()
        active.count += 1
        slot = _Slot()
        token = _current.set(slot)
        state = {"status": 500, "streaming": False, "finished": None}

        async def observing_send(message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                state["status"] = message["status"]
                for name, value in message.get("headers", ()):
                    if name == b"content-type" and value.startswith(b"text/event-stream"):
                        state["streaming"] = True
                        metrics.OPEN_STREAMS.inc()
            elif kind == "http.response.body" and not message.get("more_body", False):
                state["finished"] = time.perf_counter()
                if state["streaming"]:
                    state["streaming"] = False
                    metrics.OPEN_STREAMS.dec()
            await send(message)

        try:
            await app(scope, receive, observing_send)
        finally:
            _current.reset(token)
            if state["streaming"]:  # the client went away mid-stream
                metrics.OPEN_STREAMS.dec()
            try:
                finished = state["finished"] or time.perf_counter()
                metrics.record_request(route, state["status"], finished - started, slot.ctx)
                metrics.sample_queues()
            except Exception:  # a metrics failure must never touch the request
                logger.exception("recording metrics failed")
            finally:
                active.count -= 1

    return measured_app


def route_label(pattern: str) -> str:
    """`^api/v1/presets/(?P<slug>[^/]+)/responses/?$` -> `/api/v1/presets/{slug}/responses`."""
    import re

    label = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
    label = label.lstrip("^").rstrip("$").removesuffix("/?")
    return "/" + label.replace("\\", "")
