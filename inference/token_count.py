"""The two input-token count routes, one implementation: how many input tokens a request would take on the model
it routes to, never charged.

- `POST /api/v1/messages/count_tokens` (with or without `?beta=true`, as the anthropic SDK and Claude Code send it):
  a Messages request without `max_tokens` and `stream` (validated by the Messages ingress: a 400 names a wrong
  member). Answer: `{"input_tokens": N}`.
- `POST /api/v1/responses/input_tokens` (the openai SDK's `responses.input_tokens.count`): a Responses request
  (validated as one; `stream` is refused). Answer: `{"object": "response.input_tokens", "input_tokens": N}`.

Both run through the inference middleware chain without the steps that charge or count a call (`UNCHARGED`: rate
limits, the response cache, budgets, accounting): the same key auth, region and guardrails (a blocked request is
refused as the route's own endpoint refuses it), presets apply. Nothing is charged and no Generation row is written.

The count comes from the first candidate's provider when its format offers one: an Anthropic-format provider's
`/v1/messages/count_tokens` (the body the Messages adapter builds, restricted to the members that endpoint takes,
with the client's `anthropic-beta` features), an OpenAI Responses provider's `/v1/responses/input_tokens` (the
Responses body, restricted likewise), with the endpoint's credential and time limits. Otherwise, or when that call
fails, it is the gateway's estimate (`ESTIMATE_BYTES_PER_TOKEN` bytes of the request's text a token, media at their
per-item worst cases: metering.estimate). The answer's `x-token-count` header says which: `exact` or `estimate`.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.conf import settings

from gateway_project.api.errors import GatewayError, validation_error
from inference.consumers import InferenceConsumer
from inference.credentials import credentials_for
from inference.handler import candidate_timeouts, upstream_body, upstream_timeouts
from inference.ingress import RESPONSES, MessagesIngress, decode_body
from inference.pipeline.context import Candidate, Context
from inference.pipeline.runner import build_chain
from inference.providers.base import ProviderError, UpstreamCall, UpstreamRequest
from inference.providers.http import post_json
from inference.providers.registry import get_adapter
from inference.routing import resolve_candidates
from metering.estimate import prompt_token_estimate

logger = logging.getLogger("gateway.inference")

UNCHARGED = frozenset(
    {
        "ratelimits.middleware.RateLimitMiddleware",
        "responsecache.middleware.ResponseCacheMiddleware",
        "budgets.middleware.BudgetMiddleware",
        "inference.middleware.AccountingMiddleware",
    }
)
ESTIMATE_BYTES_PER_TOKEN = 4  # English text and code in the common BPE tokenizers: 3.5 to 4.5 bytes per token
NOT_COUNT_MEMBERS = ("max_tokens", "stream")
COUNT_MAX_TOKENS = 1 << 30  # the Messages validator wants max_tokens: a count request has none
# The members each provider's count endpoint takes (the rest of a request does not change the count).
ANTHROPIC_COUNT_MEMBERS = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "context_management", "output_config"}
    | {"output_format", "speed"}
)
RESPONSES_COUNT_MEMBERS = frozenset(
    {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "text"}
    | {"truncation", "conversation", "previous_response_id"}
)


class CountIngress(MessagesIngress):
    """A Messages body without max_tokens and stream, in the Messages error shape."""

    def parse(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        body = decode_body(raw)  # held to the depth and NUL rules before it is encoded again below
        if isinstance(body, dict):
            for name in NOT_COUNT_MEMBERS:
                if name in body:
                    raise validation_error(name, "is not a member of a count_tokens request")
            body = {**body, "max_tokens": COUNT_MAX_TOKENS}
        canonical = super().parse(orjson.dumps(body), headers)
        canonical.pop("max_output_tokens", None)
        return canonical


def _count_request(candidate: Candidate, call: UpstreamCall) -> UpstreamRequest | None:
    """The provider's count request for `call`, or None when its format has no count endpoint."""
    if candidate.api_format == "anthropic-messages":
        request = get_adapter(candidate.api_format).build_request(call)
        request.url += "/count_tokens"
        request.json = {k: v for k, v in request.json.items() if k in ANTHROPIC_COUNT_MEMBERS}
        return request
    if candidate.api_format == "openai-responses":
        request = get_adapter(candidate.api_format).build_request(call)
        request.url = request.url.removesuffix("/responses") + "/responses/input_tokens"
        request.json = {k: v for k, v in request.json.items() if k in RESPONSES_COUNT_MEMBERS}
        return request
    return None


async def _exact(ctx: Context, candidate: Candidate, body: dict[str, Any]) -> int | None:
    """The provider's own count, or None when its format has none or the call failed (the estimate answers)."""
    timeouts = candidate_timeouts(upstream_timeouts(), candidate.timeout_overrides)
    for cred in await credentials_for(ctx, candidate):
        call = UpstreamCall(
            body=body,
            upstream_model=candidate.upstream_model,
            base_url=candidate.base_url,
            credential=cred,
            stream=False,
            timeouts=timeouts,
        )
        request = _count_request(candidate, call)
        if request is None:
            return None
        try:
            data = await post_json(request, call.timeouts, cred.api_key)
        except ProviderError as error:
            logger.info("input token count on %s failed, estimating: %s", candidate.provider_slug, error)
            return None
        count = data.get("input_tokens") if isinstance(data, dict) else None
        return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
    return None


async def count_input_tokens(ctx: Context) -> tuple[int, str]:
    """(count, "exact" | "estimate") of the request in `ctx` on the first candidate it routes to."""
    candidates = await resolve_candidates(ctx)
    if not candidates:
        raise GatewayError(404, "No endpoint serves this model")
    candidate = candidates[0]
    body = upstream_body(ctx)
    count = await _exact(ctx, candidate, body)
    if count is not None:
        return count, "exact"
    return prompt_token_estimate(body, candidate, ESTIMATE_BYTES_PER_TOKEN), "estimate"


async def messages_count_handler(ctx: Context) -> None:
    count, kind = await count_input_tokens(ctx)
    responder = ctx.extras["inference.responder"]
    await responder.send_json(200, orjson.dumps({"input_tokens": count}), {"x-token-count": kind})


async def responses_count_handler(ctx: Context) -> None:
    if ctx.body.get("stream"):
        raise validation_error("stream", "is not supported by the input token count")
    count, kind = await count_input_tokens(ctx)
    data = orjson.dumps({"object": "response.input_tokens", "input_tokens": count})
    responder = ctx.extras["inference.responder"]
    await responder.send_json(200, data, {"x-token-count": kind})


class CountConsumer(InferenceConsumer):
    """A count route's ASGI application: the inference consumer (body limits, the ingress's validation and error
    shape) around its own, uncharged chain, built on first use from the settings' middleware list."""

    def __init__(self, ingress: Any, handler: Any) -> None:
        super().__init__(ingress)
        self._handler = handler
        self._count_chain = None

    @property
    def chain(self):
        if self._count_chain is None:
            paths = [p for p in settings.GATEWAY_INFERENCE_MIDDLEWARE if p not in UNCHARGED]
            self._count_chain = build_chain(self._handler, paths)
        return self._count_chain


count_tokens_consumer = CountConsumer(CountIngress(), messages_count_handler)
input_tokens_consumer = CountConsumer(RESPONSES, responses_count_handler)
