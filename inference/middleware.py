"""AccountingMiddleware: one Generation row for every request that reaches routing.

It runs innermost, so by the time `get_response` returns the client has its answer (JSON body sent or
the last SSE frame written) and the row is written off the critical path. Failures and client
disconnects (`asyncio.CancelledError`) are recorded too, in `finally`.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS, GatewayError
from gateway_project.pipeline import admitted
from inference.pipeline.context import Context
from inference.recorder import record_generation


class AccountingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        if ctx.admission is not None:  # a rate-limit check sent ahead: its refusal is not a recorded request
            await admitted(ctx)
        outcome = ctx.outcome
        try:
            await self.get_response(ctx)
        except asyncio.CancelledError:
            outcome.status = "cancelled"
            raise
        except GatewayError as error:
            outcome.status = "failed"
            outcome.error = error
            raise
        except Exception as error:
            outcome.status = "failed"
            if isinstance(error, DATABASE_UNAVAILABLE_ERRORS):
                outcome.error = GatewayError(503, f"Database unavailable: {type(error).__name__}")
            else:
                outcome.error = GatewayError(500, f"Internal error: {type(error).__name__}")
            raise
        finally:
            if outcome.latency_ms is None:
                outcome.latency_ms = int((time.perf_counter() - ctx.started) * 1000)
            if outcome.completed_at is None:
                outcome.completed_at = datetime.now(UTC)
            await record_generation(ctx)
