"""Per-key and per-workspace rate limits of the data plane (see ratelimits/limits.py for the algorithm).

Runs after GuardrailMiddleware (the body is final and the candidates filtered, so the token estimate is the
one budgets hold) and before BudgetMiddleware (a refused request takes no spend hold). A request of a
rate-limited key gets the `x-ratelimit-*` headers on every answer: JSON, stream or error.
"""

from __future__ import annotations

import asyncio

from gateway_project.api.errors import GatewayError
from gateway_project.pipeline import admitted, send_ahead
from inference.pipeline.context import Context
from metering import estimate
from ratelimits import limiter
from ratelimits.limits import Decision, limits_of, rate_limit_headers


async def _token_bound(ctx: Context) -> int:
    """The request's worst-case tokens on any candidate: the estimate budgets hold from (metering/estimate.py)."""
    candidates = ctx.candidates
    if candidates is None:
        from inference.routing import resolve_candidates

        try:
            candidates = await resolve_candidates(ctx)
        except GatewayError:  # routing fails the same way inside the chain; hold the input side only
            candidates = []
    bound = estimate.worst_case_tokens(ctx.body, candidates, prompt=estimate.request_prompt(ctx))
    return bound.input_tokens + bound.output_tokens


def _actual_tokens(ctx: Context, held: int) -> int:
    """Tokens to settle: the usage when known; the hold when the upstream may have billed an unknown amount."""
    outcome = ctx.outcome
    used = outcome.usage.input_tokens + outcome.usage.output_tokens
    if used > 0:
        return used
    if outcome.candidate is None and not outcome.attempts:
        return 0  # no upstream call was made
    if outcome.status == "failed" and not outcome.first_byte_sent:
        return 0  # every attempt failed before answering (an upstream error bills nothing)
    return held


def _settle_soon(ctx: Context, limits, decision: Decision, held: int) -> asyncio.Task | None:
    """Settle the request's tokens: in Redis queued, not awaited (None); in the database a task (group-committed)
    for the caller to await, shielded."""
    return limiter.settle_soon(decision, limits, ctx.request_id, _actual_tokens(ctx, held))


def rate_limit_error(decision: Decision) -> GatewayError:
    """429 naming the limit, with Retry-After (whole seconds, rounded up)."""
    limit = decision.refused
    assert limit is not None
    seconds = max(1, -(-decision.retry_after_ms // 1000))
    owner = "API key" if limit.scope == "api-key" else "workspace"
    if decision.dimension == "requests":
        message = f"Rate limit exceeded: {owner} allows {limit.requests_per_minute} requests per minute."
    elif decision.tokens > (limit.tokens_per_minute or 0):
        message = (
            f"Request too large: it may use up to {decision.tokens} tokens, more than the {owner}'s "
            f"{limit.tokens_per_minute} tokens per minute; lower max_output_tokens or the input."
        )
    else:
        message = f"Rate limit exceeded: {owner} allows {limit.tokens_per_minute} tokens per minute."
    metadata = {
        "rate_limit": {
            "scope": limit.scope,
            "limit_type": decision.dimension,
            "requests_per_minute": limit.requests_per_minute,
            "tokens_per_minute": limit.tokens_per_minute,
            "request_tokens": decision.tokens,
            "retry_after_ms": decision.retry_after_ms,
        }
    }
    return GatewayError(429, message, metadata=metadata, headers={"Retry-After": str(seconds)})


class _Admission:
    """The rate-limit check sent ahead (`gateway_project.pipeline.send_ahead`), awaited once with the request's
    other admission checks (`Admission.wait`): sets the rate-limit headers and raises the 429 when refused."""

    __slots__ = ("ctx", "decision", "pending")

    def __init__(self, ctx: Context, pending: limiter.PendingDecision) -> None:
        self.ctx = ctx
        self.pending = pending
        self.decision: Decision | None = None

    async def __call__(self) -> None:
        decision = self.decision
        if decision is None:
            decision = self.decision = await self.pending.result()
            _show(self.ctx, decision)
        if not decision.admitted:
            raise rate_limit_error(decision)


def _show(ctx: Context, decision: Decision) -> None:
    responder = ctx.extras.get("inference.responder")
    if responder is not None:
        responder.extra_headers[:0] = rate_limit_headers(decision)


class RateLimitMiddleware:
    """429 when the key's or the workspace's window is full; otherwise hold a slot and tokens, settle after.

    When the last decision for the key left room (ratelimits.limiter.start), the Redis check is sent and the
    chain goes on while its reply travels: the budget hold is sent meanwhile, and the decision is awaited (before
    the hold's) where the request is about to reach the upstream or to answer (gateway_project.pipeline.admitted:
    the upstream call, the response cache, AccountingMiddleware). A refusal then reads as if the check had come
    first: any error raised meanwhile (a 402 of the budget hold) gives way to the 429, the hold is released, and
    no Generation is recorded. A request admitted from a lease of this process (ratelimits/redis_leases.py) is
    decided at once, as one whose check was awaited."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        limits = limits_of(ctx.principal)
        if not limits:
            await self.get_response(ctx)
            return
        with_tokens = limits.tokens
        tokens = await _token_bound(ctx) if with_tokens else 0
        pending = limiter.start(limits, ctx.request_id, tokens)
        if pending is None or pending.decision is not None:  # awaited first, or decided already (a lease's slot)
            decision = await limiter.check(limits, ctx.request_id, tokens) if pending is None else pending.decision
            _show(ctx, decision)
            if not decision.admitted:
                raise rate_limit_error(decision)
            if not with_tokens:
                await self.get_response(ctx)
                return
            try:
                await self.get_response(ctx)
            finally:
                settling = _settle_soon(ctx, limits, decision, tokens)
                if settling is not None:
                    await asyncio.shield(settling)
            return
        check = _Admission(ctx, pending)
        send_ahead(ctx, check)
        try:
            await self.get_response(ctx)
        except asyncio.CancelledError:
            pending.abandon()
            raise
        except Exception:
            if check.decision is None and ctx.admission is not None:
                # Failed before the checks were awaited, outside AccountingMiddleware (the response cache, the
                # budget middleware's own lookups): the decision may still be on its way, and a 429 comes first.
                try:
                    await admitted(ctx)
                except GatewayError as refused:
                    raise refused from None
            raise  # admitted, or the 429 itself, or the check's own failure: as it is
        else:
            if check.decision is None:  # answered without awaiting it (no middleware of this project does)
                pending.abandon()
        finally:
            decision = check.decision
            if with_tokens and decision is not None and decision.admitted:
                settling = _settle_soon(ctx, limits, decision, tokens)
                if settling is not None:
                    await asyncio.shield(settling)
