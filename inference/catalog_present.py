"""The JSON of GET /models, GET /models/{vendor}/{name} and GET /models/{vendor}/{name}/endpoints.

A model is shaped for both audiences: OpenAI's model object (`id`, `object: "model"`, `created`, `owned_by`, so
`client.models.list()` and `client.models.retrieve()` of the openai SDK work) and the catalog fields gateway
users compare with (`name`, `canonical_slug`, `context_length`, `architecture`, `pricing`, `top_provider`,
`supported_parameters`). Prices are USD per token as decimal strings, never floats.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from inference.catalog_selectors import PRICE_NAMES, VisibleModel, supported_parameters
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
    model = entry.model
    inputs, outputs = list(model.input_modalities or ()), list(model.output_modalities or ())
    return {"modality": modality(inputs, outputs), "input_modalities": inputs, "output_modalities": outputs}


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
        "context_length": top.context_length,
        "architecture": architecture(entry),
        "pricing": pricing(top_endpoint),
        "top_provider": {
            "provider": top.provider_slug,
            "context_length": top.context_length,
            "max_completion_tokens": top.max_output_tokens,
        },
        "supported_parameters": supported_parameters(entry),
        "links": {"details": f"{API_PREFIX}/models/{model.slug}/endpoints"},
    }


def endpoint_object(endpoint: Endpoint, candidate: Candidate) -> dict[str, Any]:
    """One endpoint of a model: who serves it, at what price, with which limits, data policy and regions."""
    return {
        "name": f"{candidate.provider_name} | {candidate.model_slug}",
        "model_id": candidate.model_slug,
        "provider": candidate.provider_slug,
        "provider_name": candidate.provider_name,
        "context_length": candidate.context_length,
        "max_completion_tokens": candidate.max_output_tokens,
        "pricing": pricing(endpoint),
        "is_free": candidate.is_free,
        "supported_parameters": list(candidate.supported_parameters),
        "zdr": candidate.zdr,
        "data_policy": {
            "zdr": candidate.zdr,
            "trains_on_data": candidate.trains_on_data,
            "publishes_prompts": candidate.publishes_prompts,
        },
        "regions": list(candidate.regions),
    }


def endpoints_object(entry: VisibleModel) -> dict[str, Any]:
    """GET /models/{vendor}/{name}/endpoints: the model and its endpoints, in the order routing tries them."""
    model = entry.model
    return {
        "id": model.slug,
        "name": model.name or model.slug,
        "canonical_slug": model.canonical_slug or model.slug,
        "created": _created(entry),
        "architecture": architecture(entry),
        "endpoints": [endpoint_object(endpoint, candidate) for endpoint, candidate in entry.endpoints],
    }
