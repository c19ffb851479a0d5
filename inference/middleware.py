"""AccountingMiddleware: one Generation row for every request that reaches routing.

It runs innermost, so by the time `get_response` returns the client has its answer (JSON body sent or
the last SSE frame written) and the row is written off the critical path. Failures and client
disconnects (`asyncio.CancelledError`) are recorded too, in `finally`. A request that an admission check sent
ahead refused (a 429 of the rate limits, a 402 of the spend hold: `gateway_project.pipeline.admitted`) or that
went away before its checks were awaited is not recorded: it never reached the upstream.
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
        outcome = ctx.outcome
        cancelled = False
        try:
            await self.get_response(ctx)
        except asyncio.CancelledError:
            cancelled = True
            outcome.status = "cancelled"
            if ctx.admission is not None:  # gone before its admission checks were awaited: nothing went upstream
                ctx.not_admitted = True
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
            if ctx.admission is not None and not cancelled:
                # Failed before the upstream call's gate awaited the admission checks sent ahead (rate limit, spend
                # hold), which may still be on their way: awaited here, inside BudgetMiddleware (so an admitted
                # request's hold is settled, not released), because whether the row is written depends on them. A
                # refusal comes first (raised here, it replaces the error) and the request is not recorded.
                await admitted(ctx)
            if not ctx.not_admitted:
                if outcome.latency_ms is None:
                    outcome.latency_ms = int((time.perf_counter() - ctx.started) * 1000)
                if outcome.completed_at is None:
                    outcome.completed_at = datetime.now(UTC)
                await record_generation(ctx)
