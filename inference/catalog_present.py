"""The JSON of GET /models, GET /models/{vendor}/{name} and GET /models/{vendor}/{name}/endpoints.

A model is shaped for both audiences: OpenAI's model object (`id`, `object: "model"`, `created`, `owned_by`, so
`client.models.list()` and `client.models.retrieve()` of the openai SDK work) and the catalog fields gateway
users compare with (`name`, `canonical_slug`, `context_length`, `architecture`, `pricing`, `top_provider`,
`supported_parameters`). Prices are USD per token as decimal strings, never floats.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from inference.catalog_query import context_length
from inference.catalog_selectors import PRICE_NAMES, VisibleModel, supported_parameters
from inference.endpoint_traffic import EndpointTraffic, endpoint_traffic
from inference.models import Endpoint
from inference.pipeline.context import Candidate

API_PREFIX = "/api/v1"


def decimal_string(value: Decimal) -> str:
    """A price as a plain decimal string: 0.00000015, 0.000002, 0 (no exponent, no trailing zeros)."""
    text = format(Decimal(value).normalize(), "f")
    return text if text != "-0" else "0"


def pricing(endpoint: Endpoint) -> dict[str, str]:
    """Every price the endpoint has (USD per token or per request), by its public name; unset prices absent."""
    prices: dict[str, str] = {}
    for field, name in PRICE_NAMES:
        value = getattr(endpoint, field, None)
        if value is not None:
            prices[name] = decimal_string(value)
    return prices


def modality(inputs: list[str], outputs: list[str]) -> str:
    """`text+image->text`: the summary string of the architecture."""
    return "+".join(inputs or ["text"]) + "->" + "+".join(outputs or ["text"])


def architecture(entry: VisibleModel) -> dict[str, Any]:
    """Modalities from the catalog; `tokenizer` and `instruct_type` null: the catalog does not state them."""
    model = entry.model
    inputs, outputs = list(model.input_modalities or ()), list(model.output_modalities or ())
    return {
        "modality": modality(inputs, outputs),
        "input_modalities": inputs,
        "output_modalities": outputs,
        "tokenizer": None,
        "instruct_type": None,
    }


def _created(entry: VisibleModel) -> int:
    return int(entry.model.created_at.timestamp())


def model_object(entry: VisibleModel) -> dict[str, Any]:
    """One model as GET /models lists it (pricing, context and limits of its first endpoint in routing order)."""
    model = entry.model
    top_endpoint, top = entry.endpoints[0]
    return {
        "id": model.slug,
        "object": "model",
        "created": _created(entry),
        "owned_by": model.vendor,
        "name": model.name or model.slug,
        "canonical_slug": model.canonical_slug or model.slug,
        "context_length": context_length(entry),
        "architecture": architecture(entry),
        "pricing": pricing(top_endpoint),
        "top_provider": {
            "provider": top.provider_slug,
            "context_length": top.context_length,
            "max_completion_tokens": top.max_output_tokens,
            "is_moderated": entry.moderated,
        },
        "supported_parameters": supported_parameters(entry),
        "default_parameters": None,  # the catalog sets no sampling defaults: the provider's apply
        "per_request_limits": None,  # no per-request token caps beyond the endpoint's context and output limits
        "supported_voices": None,  # no speech output models
        "links": {"details": f"{API_PREFIX}/models/{model.slug}/endpoints"},
    }


def _percentiles(stats: dict[str, float] | None) -> dict[str, float] | None:
    return dict(stats) if stats else None


def model_list(models: list[VisibleModel], total: int, query, params, path: str) -> dict[str, Any]:
    """A page of models: OpenAI's list (`object`, `data`) with the public router API's `total_count` and
    `links.next` (the same query with `offset` moved past this page; null on the last page)."""
    following = None
    if query.limit is not None and query.offset + len(models) < total:
        moved = params.copy()
        moved["offset"] = str(query.offset + len(models))
        following = f"{path}?{moved.urlencode()}"
    return {
        "object": "list",
        "data": [model_object(entry) for entry in models],
        "total_count": total,
        "links": {"next": following},
    }


def endpoint_object(entry: VisibleModel, endpoint: Endpoint, candidate: Candidate, traffic: EndpointTraffic) -> dict:
    """One endpoint of a model: who serves it, at what price, with which limits, data policy, regions, and how
    it behaved on this gateway's recent traffic (inference/endpoint_traffic.py)."""
    declared = list(candidate.supported_parameters)
    tool_choice = "tool_choice" in declared  # the gateway translates every tool_choice form across formats
    return {
        "name": f"{candidate.provider_name} | {candidate.model_slug}",
        "model_id": candidate.model_slug,
        "model_name": entry.model.name or entry.model.slug,
        "provider": candidate.provider_slug,
        "provider_name": candidate.provider_name,
        "tag": candidate.provider_slug,
        "context_length": candidate.context_length or entry.model.context_length,
        "max_completion_tokens": candidate.max_output_tokens,
        "max_prompt_tokens": None,
        "pricing": pricing(endpoint),
        "is_free": candidate.is_free,
        "quantization": None,
        "service_tier": None,
        "supported_parameters": declared,
        "supports_tool_choice": dict.fromkeys(("auto", "none", "required", "function"), tool_choice),
        "supports_implicit_caching": endpoint.cached_prompt_price is not None and endpoint.cache_write_5m_price is None,
        "supports_diarization": "transcription" in (entry.model.output_modalities or ()),
        "native_tools": {},
        "zdr": candidate.zdr,
        "data_policy": {
            "zdr": candidate.zdr,
            "trains_on_data": candidate.trains_on_data,
            "publishes_prompts": candidate.publishes_prompts,
        },
        "regions": list(candidate.regions),
        "uptime_last_5m": traffic.uptime["5m"],
        "uptime_last_30m": traffic.uptime["30m"],
        "uptime_last_1d": traffic.uptime["1d"],
        "latency_last_30m": _percentiles(traffic.latency),
        "throughput_last_30m": _percentiles(traffic.throughput),
    }


def description(entry: VisibleModel) -> str:
    """What the catalog says of the model, in a sentence."""
    model = entry.model
    providers = ", ".join(candidate.provider_name for _, candidate in entry.endpoints)
    return (
        f"{model.name or model.slug} by {model.vendor}: {architecture(entry)['modality']}, "
        f"{context_length(entry)} tokens of context; served here by {providers}."
    )


def endpoints_object(entry: VisibleModel) -> dict[str, Any]:
    """GET /models/{vendor}/{name}/endpoints: the model and its endpoints, in the order routing tries them."""
    model = entry.model
    traffic = endpoint_traffic(endpoint.id for endpoint, _ in entry.endpoints)
    return {
        "id": model.slug,
        "name": model.name or model.slug,
        "canonical_slug": model.canonical_slug or model.slug,
        "created": _created(entry),
        "description": description(entry),
        "architecture": architecture(entry),
        "endpoints": [endpoint_object(entry, e, c, traffic[e.id]) for e, c in entry.endpoints],
    }
