"""After-response instrumentation of the data plane: an ASGI wrapper per route and a pipeline middleware.

`measured(app, route)` wraps a data-plane route's ASGI application (gateway_project/asgi.py wraps every route
of `inference.asgi_routes.http_routes`). It notes the status the answer started with, counts the answer as an
open stream while a `text/event-stream` body is being sent, and once the application returns (the client has
its whole answer) it records the request for /metrics (operations/metrics.py, unless GATEWAY_METRICS_ENABLED
is false) and runs the `after_response` hooks (the audit log's refusal records). `MetricsMiddleware`, the
outermost inference middleware, only hands the request's Context (and a refusal's GatewayError) to the wrapper
through a context variable the request's task inherits, so model, provider, ingress format, attempts, tokens
and cost come from what the pipeline already recorded. Requests refused before a Context exists (400, 413)
are counted with model and provider `none`.
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

from gateway_project.api.errors import GatewayError
from operations import metrics

logger = logging.getLogger("gateway.metrics")


class Finished:
    """What the wrapper knows about a request once its answer is complete."""

    __slots__ = ("ctx", "error", "route", "status")

    def __init__(self) -> None:
        self.ctx = None
        self.error: GatewayError | None = None
        self.status = 500
        self.route = ""


# Called with the Finished request after its answer was sent (and its metrics recorded); awaited by the
# request's task, so work done here never delays the client but does keep the shutdown drain waiting.
after_response: list[Callable[[Finished], Awaitable[None] | None]] = []

_current: contextvars.ContextVar[Finished | None] = contextvars.ContextVar("gateway_finished", default=None)


class _Active:
    """Measured requests not finished yet (tests wait for 0: records are made after the last byte is sent)."""

    count = 0


active = _Active()


class MetricsMiddleware:
    """Outermost inference middleware: lets the route's wrapper see the Context and a refusal's error."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx) -> None:
        finished = _current.get()
        if finished is None:
            await self.get_response(ctx)
            return
        finished.ctx = ctx
        try:
            await self.get_response(ctx)
        except GatewayError as error:
            finished.error = error
            raise


def measured(app, route: str):
    """`app` with its requests recorded under the label `route`."""

    async def measured_app(scope, receive, send) -> None:
        started = time.perf_counter()
        active.count += 1
        finished = Finished()
        finished.route = route
        token = _current.set(finished)
        state: dict[str, Any] = {"streaming": False, "at": None}

        async def observing_send(message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                finished.status = message["status"]
                for name, value in message.get("headers", ()):
                    if name == b"content-type" and value.startswith(b"text/event-stream"):
                        state["streaming"] = True
                        metrics.OPEN_STREAMS.inc()
            elif kind == "http.response.body" and not message.get("more_body", False):
                state["at"] = time.perf_counter()
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
                await _finish(finished, (state["at"] or time.perf_counter()) - started)
            finally:
                active.count -= 1
                # The Context reaches this closure (its responder sends through observing_send, whose cell holds
                # `finished`): cut the cycle so the request's objects are freed now, not by the cyclic collector.
                finished.ctx = None

    return measured_app


async def _finish(finished: Finished, duration: float) -> None:
    try:
        if settings.GATEWAY_METRICS_ENABLED:
            metrics.record_request(finished.route, finished.status, duration, finished.ctx)
            metrics.sample_queues()
    except Exception:  # a metrics failure must never touch the request
        logger.exception("recording metrics failed")
    for hook in after_response:
        try:
            result = hook(finished)
            if result is not None:
                await result
        except Exception:
            logger.exception("after-response hook %r failed", hook)


def route_label(pattern: str) -> str:
    """`^api/v1/presets/(?P<slug>[^/]+)/responses/?$` -> `/api/v1/presets/{slug}/responses`."""
    label = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
    label = label.lstrip("^").rstrip("$").removesuffix("/?")
    return "/" + label.replace("\\", "")
