"""Router parameters: the sampling members the public router API sends only to endpoints that support them.

A request may carry `temperature`, `top_p`, `top_k`, `min_p`, `top_a`, `frequency_penalty`, `presence_penalty`,
`repetition_penalty`, `seed`, `logit_bias`, `stop`, `top_logprobs` and a top-level `cache_control` (canonical
names, as in the Responses body). For each candidate endpoint the ones it supports are sent and the others left
out (`omit_unsupported`); what was left out for the endpoint that answered is in `service_metadata.
omitted_parameters` and the `x-service-omitted-parameters` response header. With `provider.require_parameters:
true` only endpoints that support every parameter the request uses are candidates (inference.routing).

What an endpoint supports: the parameters its catalog `supported_parameters` declares (in the public router
API's names: `max_tokens`, `response_format`, `structured_outputs`, `tools`, ... and the names above) that its
provider's API format can carry; an endpoint that declares nothing gets what its format carries by default
(`DEFAULTS`: today's behaviour for endpoints added without a declaration). A request that uses none of them
costs one `isdisjoint` over its members.
"""

from __future__ import annotations

import functools
from typing import Any

from gateway_project.pipeline import Candidate, Context
from inference.providers.anthropic import thinks

# Canonical member → the public router API's parameter name (the `supported_parameters` vocabulary).
ROUTER_PARAMETERS: dict[str, str] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "top_a": "top_a",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "repetition_penalty": "repetition_penalty",
    "seed": "seed",
    "logit_bias": "logit_bias",
    "stop": "stop",
    "top_logprobs": "top_logprobs",
    "cache_control": "cache_control",
}
ROUTER_KEYS = frozenset(ROUTER_PARAMETERS)
# Other canonical members `provider.require_parameters` checks (never left out: they change what the answer is).
REQUIRED_ONLY: dict[str, str] = {
    "max_output_tokens": "max_tokens",
    "tools": "tools",
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "reasoning": "reasoning",
}
_CHAT_ALL = frozenset(ROUTER_KEYS)
# What each provider API format can carry at all (a declaration beyond it is not honoured).
CAPABLE: dict[str, frozenset[str]] = {
    "openai-chat": _CHAT_ALL,
    "openai-responses": frozenset({"temperature", "top_p", "top_logprobs"}),
    "anthropic-messages": frozenset({"temperature", "top_p", "top_k", "stop", "cache_control"}),
    "echo": frozenset({"stop", "seed"}),  # the echo cuts at `stop`; it is deterministic whatever the seed
}
# What an endpoint that declares no `supported_parameters` is sent: what its format carries, except the
# extensions not every OpenAI-compatible server takes (and top_k, which api.openai.com refuses).
_CHAT_EXTENSIONS = frozenset({"min_p", "top_a", "repetition_penalty", "cache_control"})
DEFAULTS: dict[str, frozenset[str]] = {**CAPABLE, "openai-chat": _CHAT_ALL - _CHAT_EXTENSIONS}
NOT_WITH_THINKING = frozenset({"temperature", "top_p", "top_k"})
HEADER = b"x-service-omitted-parameters"


def router_parameters_used(body: dict[str, Any]) -> frozenset[str]:
    """The router parameters the request sets (canonical names); empty for most requests."""
    if ROUTER_KEYS.isdisjoint(body):
        return frozenset()
    return frozenset(k for k in ROUTER_KEYS.intersection(body) if body[k] is not None)


@functools.lru_cache(maxsize=1024)
def supported(api_format: str, declared: tuple[str, ...], base_url: str) -> frozenset[str]:
    """The router parameters (canonical names) an endpoint is sent."""
    capable = CAPABLE.get(api_format, frozenset())
    if declared:
        names = set(declared)
        return frozenset(k for k, public in ROUTER_PARAMETERS.items() if public in names and k in capable)
    default = DEFAULTS.get(api_format, frozenset())
    if api_format == "openai-chat" and "api.openai.com" in base_url:
        default = default - {"top_k"}
    return default


def candidate_supports(candidate: Candidate) -> frozenset[str]:
    return supported(candidate.api_format, candidate.supported_parameters, candidate.base_url)


def omit_unsupported(
    body: dict[str, Any], used: frozenset[str], candidate: Candidate
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the body `candidate` is sent, the public names of the parameters left out for it)."""
    omitted = used - candidate_supports(candidate)
    if candidate.api_format == "anthropic-messages" and used & NOT_WITH_THINKING and thinks(body):
        omitted |= used & NOT_WITH_THINKING  # Anthropic refuses sampling parameters with thinking on
    if not omitted:
        return body, ()
    return {k: v for k, v in body.items() if k not in omitted}, tuple(sorted(ROUTER_PARAMETERS[k] for k in omitted))


def note_omitted(ctx: Context, omitted: tuple[str, ...]) -> None:
    """Record what this attempt left out: `service_metadata.omitted_parameters` and the response header."""
    ctx.outcome.omitted_parameters = omitted
    responder = ctx.extras.get("inference.responder")
    if responder is None or responder.started:
        return
    headers = [h for h in responder.extra_headers if h[0] != HEADER]
    if omitted:
        headers.append((HEADER, ", ".join(omitted).encode()))
    responder.extra_headers = headers


def required_names(body: dict[str, Any]) -> list[str]:
    """The public names of every parameter `provider.require_parameters` asks endpoints to support."""
    names = [ROUTER_PARAMETERS[k] for k in sorted(router_parameters_used(body))]
    for key, public in REQUIRED_ONLY.items():
        if body.get(key) not in (None, [], {}):
            names.append(public)
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        names.append("structured_outputs" if fmt["type"] == "json_schema" else "response_format")
    if isinstance(body.get("text"), dict) and body["text"].get("verbosity"):
        names.append("verbosity")
    return names


def supports_all(candidate: Candidate, names: list[str]) -> bool:
    """`provider.require_parameters`: the endpoint declares every name (and its format can carry the router
    parameters among them)."""
    declared = candidate.supported_parameters
    if not all(name in declared for name in names):
        return False
    carried = candidate_supports(candidate)
    return all(key in carried for key, public in ROUTER_PARAMETERS.items() if public in names)
