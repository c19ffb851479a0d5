"""The innermost handler of POST /embeddings, in the same middleware chain as /responses (auth, region,
guardrails, budgets, rate limits and accounting run around it exactly as they do around inference.handler).

For each candidate endpoint of the embeddings model (inference.routing) and each of its credentials
(inference.credentials): call the embeddings adapter; an authentication failure moves to the next
credential, a retryable failure to the next candidate, a bad request stops, as for /responses; so does a call
the provider may have billed (a timeout after the send, a 2xx answer it cannot read), charged its input bound
and marked `usage_estimated`. The answer is
the OpenAI embeddings list; `usage` carries `cost` as on /responses.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from gateway_project.api.errors import GatewayError, validation_error
from inference.credentials import credentials_for
from inference.embeddings import vectors
from inference.embeddings.adapters import EmbeddingCall, EmbeddingResult, embeddings_adapter
from inference.embeddings.schema import input_list
from inference.handler import hash_identifier, map_failure, upstream_timeouts
from inference.pipeline.context import Candidate, Context, Credential, Usage
from inference.providers.base import ProviderError, ProviderErrorKind
from inference.providers.errors import malformed
from inference.routing import remember_session, requested_models, resolve_candidates
from metering.prices import usage_cost


def _attempt(ctx: Context, candidate: Candidate, status: str) -> None:
    ctx.outcome.attempts.append({"model": candidate.model_slug, "provider": candidate.provider_slug, "status": status})


def _routable(ctx: Context, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates that can honour `dimensions` (an endpoint declares it in `supported_parameters`)."""
    if ctx.body.get("dimensions") is None:
        return candidates
    kept = [c for c in candidates if "dimensions" in c.supported_parameters]
    if not kept:
        names = ", ".join(requested_models(ctx.body))
        raise validation_error("dimensions", f"not supported by any endpoint of {names}")
    return kept


def _estimated_tokens(inputs: list[str | list[int]]) -> int:
    """Input tokens when the upstream reports none: token ids counted, text at its UTF-8 bytes (the bound of
    docs/budgets.md: no tokenizer produces more tokens than bytes), so the charge is never below the bill."""
    return sum(len(item) if isinstance(item, list) else len(item.encode()) for item in inputs)


def answer_object(
    ctx: Context, candidate: Candidate, result: EmbeddingResult, cost: Decimal, is_byok: bool
) -> dict[str, Any]:
    encoding_format = ctx.body.get("encoding_format") or "float"
    data = [
        {"object": "embedding", "index": index, "embedding": vectors.encode(vector, encoding_format)}
        for index, vector in enumerate(result.vectors)
    ]
    tokens = result.usage.input_tokens
    return {
        "object": "list",
        "id": f"emb_{ctx.request_id}",
        "data": data,
        "model": candidate.model_slug,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "cost": float(cost), "is_byok": is_byok},
    }


def _charge_unanswered(ctx: Context, candidate: Candidate, cred: Credential, inputs) -> None:
    """The provider had the request and may bill it: charged its input bound (within the request's hold)."""
    outcome = ctx.outcome
    outcome.usage = Usage(input_tokens=_estimated_tokens(inputs), reported=False, estimated=True)
    outcome.cost = usage_cost(candidate, outcome.usage)
    outcome.candidate, outcome.credential_is_byok = candidate, cred.is_byok


async def _answer(ctx: Context, candidate: Candidate, cred: Credential, result: EmbeddingResult, inputs) -> None:
    outcome = ctx.outcome
    if not result.usage.input_tokens:
        result.usage = Usage(input_tokens=_estimated_tokens(inputs), reported=False, estimated=True)
    cost = usage_cost(candidate, result.usage)
    try:
        payload = answer_object(ctx, candidate, result, cost, cred.is_byok)
    except ValueError:  # an upstream base64 vector that does not decode
        raise malformed("embeddings body (base64)") from None
    outcome.ttft_ms = int((time.perf_counter() - ctx.started) * 1000)
    outcome.status, outcome.finish_reason = "completed", "stop"
    outcome.usage, outcome.cost = result.usage, cost
    outcome.candidate, outcome.credential_is_byok = candidate, cred.is_byok
    _attempt(ctx, candidate, "success")
    remember_session(ctx, candidate)
    outcome.first_byte_sent = True
    await ctx.extras["inference.responder"].send_json(200, orjson.dumps(payload))


async def handle_embeddings(ctx: Context) -> None:
    """Answer the embeddings request from the first candidate that works."""
    candidates = _routable(ctx, await resolve_candidates(ctx))
    body = ctx.body
    inputs = input_list(body)
    org = ctx.principal.organization_id if ctx.principal else ""
    user = hash_identifier(org, body["user"]) if body.get("user") else None
    timeouts = upstream_timeouts()
    errors: list[tuple[Candidate, ProviderError]] = []
    for candidate in candidates:
        adapter = embeddings_adapter(candidate.api_format)
        credentials = await credentials_for(ctx, candidate) if adapter is not None else []
        if not credentials:
            _attempt(ctx, candidate, "no_credentials" if adapter is not None else "unsupported")
            continue
        for cred in credentials:
            call = EmbeddingCall(
                inputs=inputs,
                raw_input=body["input"],
                upstream_model=candidate.upstream_model,
                base_url=candidate.base_url,
                credential=cred,
                encoding_format=body.get("encoding_format") or "float",
                dimensions=body.get("dimensions"),
                user=user,
                timeouts=timeouts,
            )
            try:
                await _answer(ctx, candidate, cred, await adapter.embed(call), inputs)
            except ProviderError as error:
                if error.maybe_billed:  # a timeout after the send, a 2xx answer unreadable: charged, not re-sent
                    _charge_unanswered(ctx, candidate, cred, inputs)
                _attempt(ctx, candidate, error.kind.value)
                errors.append((candidate, error))
                if error.kind == ProviderErrorKind.AUTH:
                    continue
                if not error.retryable:
                    raise map_failure(errors) from None
                break
            ctx.outcome.completed_at = datetime.now(UTC)
            return
    if not errors:
        providers = ", ".join(sorted({c.provider_slug for c in candidates}))
        raise GatewayError(
            502,
            f"No provider credentials are configured for {providers}",
            metadata={"provider_name": candidates[0].provider_slug, "raw": None, "error_type": "provider_unavailable"},
        )
    raise map_failure(errors)
