"""POST /api/v1/responses/input_tokens: how many input tokens a Responses request would be billed for on the model
it routes to (the openai SDK's `client.responses.input_tokens.count(...)`).

The body is a Responses request (validated as one; `stream` is refused). It passes the same key authentication,
region, preset and guardrail middlewares as a request (GATEWAY_INPUT_TOKENS_MIDDLEWARE), and never the rate limits,
budgets or accounting: nothing is charged and no Generation row is written. The count is exact when the routed
endpoint speaks openai-responses (its `POST /responses/input_tokens` is asked, with the endpoint's credential);
otherwise, or when that provider has no such endpoint, it is the gateway's estimate (budgets/estimate.py: the
request's text at 4 UTF-8 bytes per token, media at their per-item worst cases). The header `x-token-count` says
which (`exact` or `estimate`). Answer: `{"object": "response.input_tokens", "input_tokens": N}`.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.conf import settings

from budgets.estimate import prompt_token_estimate
from gateway_project.api.errors import validation_error
from inference.consumers import InferenceConsumer
from inference.credentials import credentials_for
from inference.handler import candidate_timeouts, upstream_timeouts
from inference.ingress import RESPONSES
from inference.pipeline.context import Candidate, Context
from inference.pipeline.runner import build_chain
from inference.providers.base import ProviderError, UpstreamRequest
from inference.providers.errors import malformed
from inference.providers.http import post_json
from inference.routing import resolve_candidates

logger = logging.getLogger("gateway.inference")

# The members OpenAI's /responses/input_tokens takes (the rest of a Responses body does not change the count).
COUNTED_FIELDS = ("input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "text")
ESTIMATE_BYTES_PER_TOKEN = 4.0  # English text and code in the common BPE tokenizers: 3.5 to 4.5 bytes per token
DEFAULT_MIDDLEWARE = [
    "accounts.middleware.KeyAuthMiddleware",
    "guardrails.middleware.RegionMiddleware",
    "presets.middleware.PresetMiddleware",
    "guardrails.middleware.GuardrailMiddleware",
]


def middleware_paths() -> list[str]:
    return getattr(settings, "GATEWAY_INPUT_TOKENS_MIDDLEWARE", DEFAULT_MIDDLEWARE)


async def count_handler(ctx: Context) -> None:
    """The innermost handler of the count: the routed model's count, written as JSON."""
    if ctx.body.get("stream"):
        raise validation_error("stream", "is not supported by the input token count")
    candidate = (await resolve_candidates(ctx))[0]
    count = await _exact(ctx, candidate) if candidate.api_format == "openai-responses" else None
    source = "exact"
    if count is None:
        counted = {k: ctx.body[k] for k in COUNTED_FIELDS if ctx.body.get(k) is not None}
        count, source = prompt_token_estimate(counted, candidate, ESTIMATE_BYTES_PER_TOKEN), "estimate"
    data = orjson.dumps({"object": "response.input_tokens", "input_tokens": count})
    responder = ctx.extras["inference.responder"]
    await responder.send_json(200, data, {"x-token-count": source})


async def _exact(ctx: Context, candidate: Candidate) -> int | None:
    """The provider's own count, or None when it has none (or it failed: the estimate answers then)."""
    body: dict[str, Any] = {"model": candidate.upstream_model}
    body.update((k, ctx.body[k]) for k in COUNTED_FIELDS if ctx.body.get(k) is not None)
    timeouts = candidate_timeouts(upstream_timeouts(), candidate.timeout_overrides)
    for credential in await credentials_for(ctx, candidate):
        headers = {"Content-Type": "application/json"}
        if credential.api_key:
            headers["Authorization"] = f"Bearer {credential.api_key}"
        request = UpstreamRequest(candidate.base_url.rstrip("/") + "/responses/input_tokens", headers, body)
        try:
            answer = await post_json(request, timeouts, credential.api_key)
            count = answer.get("input_tokens") if isinstance(answer, dict) else None
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise malformed("input_tokens answer", raw=answer)
            return count
        except ProviderError as error:
            logger.info("%s: no input token count (%s); estimated", candidate.provider_slug, error.message)
            return None
    return None


class InputTokensConsumer(InferenceConsumer):
    """The inference consumer (body limits, Responses validation, error envelope) around the count's own chain."""

    _count_chain = None

    @property
    def chain(self):
        if InputTokensConsumer._count_chain is None:
            InputTokensConsumer._count_chain = build_chain(count_handler, middleware_paths())
        return InputTokensConsumer._count_chain


input_tokens_consumer = InputTokensConsumer(RESPONSES)
