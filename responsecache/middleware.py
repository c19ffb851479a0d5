"""ResponseCacheMiddleware: an exact-match cache of answers, after auth, guardrails and rate limits and before
budgets (docs/cache.md).

A request uses the cache when it sends `X-Service-Cache: enabled` or its workspace has `response_cache_enabled`
(responsecache/policy.py). Its key is its organization and the canonical request without non-semantic members
(responsecache/entry.py). A hit is replayed through the request's ingress, JSON or stream, from the stored
canonical answer, and recorded as a Generation with cost 0 and `cache_hit` (budgets are not involved); a miss
goes down the chain and its answer is stored after the client has it. Either answer carries `X-Service-Cache:
HIT` or `MISS` (`BYPASS` for a request of a caching workspace that cannot be cached). A request without the
headers, in a workspace without the setting, costs one dictionary lookup and one attribute read.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from gateway_project.api.errors import validation_error
from gateway_project.pipeline import admitted
from inference.ingress import ingress_of
from inference.middleware import AccountingMiddleware
from inference.pipeline.context import Candidate, Context
from inference.providers.base import CanonicalResult, StreamDone
from responsecache import store
from responsecache.entry import Entry, encode, fresh, request_key
from responsecache.policy import HEADER, HEADER_NAME, TTL_HEADER, cache_ttl, uncacheable_reason

logger = logging.getLogger("gateway.responsecache")
HIT = (b"x-service-cache", b"HIT")
MISS = (b"x-service-cache", b"MISS")
BYPASS = (b"x-service-cache", b"BYPASS")


class ResponseCacheMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        headers = ctx.headers
        if HEADER not in headers and TTL_HEADER not in headers and not ctx.principal.response_cache:
            await self.get_response(ctx)
            return
        if ctx.admission is not None:
            # Awaited here: a hit answers without an upstream call (no gate), and the rate-limit decision (its 429
            # and its x-ratelimit-* headers) comes before a hit, a cache header or a 400 about caching.
            await admitted(ctx)
        ttl = cache_ttl(ctx)
        if ttl is None:
            await self.get_response(ctx)
            return
        responder = ctx.extras["inference.responder"]
        reason = uncacheable_reason(ctx)
        if reason is not None:
            if HEADER in headers:  # asked for explicitly: refused rather than silently not cached
                raise validation_error(HEADER_NAME, f"this request cannot be cached: {reason}")
            responder.extra_headers.append(BYPASS)
            _stage(ctx, "bypass", reason)
            await self.get_response(ctx)
            return
        key = request_key(ctx.body)
        organization_id = ctx.principal.organization_id
        entry, where = await store.lookup(organization_id, key)
        if entry is not None and fresh(entry, ttl):
            candidate = await _allowed_candidate(ctx, entry)
            if candidate is not None:
                responder.extra_headers.append(HIT)
                _stage(ctx, "hit", f"answered from the cache ({where})")
                await AccountingMiddleware(_replayer(entry, candidate))(ctx)
                return
        responder.extra_headers.append(MISS)
        _stage(ctx, "miss", "answered by the provider")
        recorder = _RecordingIngress(ingress_of(ctx))
        ctx.ingress = recorder
        await self.get_response(ctx)
        if recorder.result is not None:
            await _store(ctx, organization_id, key, recorder.result, ttl)


def _stage(ctx: Context, result: str, summary: str) -> None:
    ctx.extras["responsecache.result"] = result  # the gateway_response_cache_total metric (operations/metrics.py)
    ctx.pipeline.append({"type": "cache", "name": "response-cache", "summary": summary, "data": {"result": result}})


async def _allowed_candidate(ctx: Context, entry: Entry) -> Candidate | None:
    """The endpoint that produced the entry, if this request may still be routed to it (guardrails, provider
    preferences and the catalog as they are now); None makes the request a miss."""
    from inference.routing import resolve_candidates

    for candidate in await resolve_candidates(ctx):
        if str(candidate.endpoint_id) == entry.endpoint_id:
            return candidate
    return None


def _replayer(entry: Entry, candidate: Candidate):
    """The innermost handler of a hit: the stored answer written in the request's wire format, JSON or stream."""

    async def replay(ctx: Context) -> None:
        responder = ctx.extras["inference.responder"]
        result = entry.canonical()
        outcome = ctx.outcome
        outcome.candidate = candidate
        outcome.cache_hit = True
        outcome.streamed = ctx.stream
        ingress = ingress_of(ctx)
        if not ctx.stream:
            await responder.send_json(200, ingress.json_answer(ctx, result, candidate, False))
            return
        writer = ingress.stream_writer(ctx, responder, candidate, False)
        ctx.extras["inference.stream"] = writer
        await writer.open(None)
        await writer.handle(StreamDone(result))  # every writer renders a result-only stream in full

    return replay


async def _store(ctx: Context, organization_id: Any, key: str, result: CanonicalResult, ttl: int) -> None:
    """Keep a finished answer (after the client has it); a failure is logged, never the client's problem."""
    outcome = ctx.outcome
    if outcome.status not in ("completed", "incomplete") or outcome.error is not None or outcome.candidate is None:
        return
    value, model, expires = encode(outcome, result, ttl)
    if len(value) > settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRY_BYTES:
        return
    try:
        await store.save(organization_id, key, value, model, expires)
    except Exception:
        logger.warning("response cache: could not store the answer of %s", ctx.request_id, exc_info=True)


class _RecordingIngress:
    """The request's ingress, keeping the canonical result it renders (JSON answer or end of stream)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.result: CanonicalResult | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def json_answer(self, ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
        self.result = result
        return self.inner.json_answer(ctx, result, candidate, is_byok)

    def stream_writer(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> Any:
        return _RecordingWriter(self, self.inner.stream_writer(ctx, responder, candidate, is_byok))


class _RecordingWriter:
    def __init__(self, recorder: _RecordingIngress, inner: Any) -> None:
        self.recorder = recorder
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def handle(self, event: Any) -> bool:
        done = await self.inner.handle(event)
        if isinstance(event, StreamDone):
            self.recorder.result = event.result
        return done
