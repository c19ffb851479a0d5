"""The moderation model of the catalog and its OpenAI-compatible `POST {base_url}/moderations`.

A moderation model has the output modality `moderation` alone (inference.catalog_loader: OpenAI-compatible
provider formats, free endpoints only). The plugin uses GATEWAY_MODERATION_MODEL when set, else the catalog's
first moderation model by slug; of its endpoints, the first the request's guardrails allow (the text is sent
to that provider, so the key's provider and data policies apply as they do to the model itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from gateway_project.api.errors import GatewayError
from inference.credentials import credentials_for
from inference.pipeline.context import Candidate
from inference.providers.base import ProviderError, UpstreamRequest
from inference.providers.http import post_json
from inference.routing import MODERATION, catalog_snapshot

EXCERPT = 100


@dataclass(slots=True)
class EndpointVerdict:
    categories: list[str] = field(default_factory=list)  # flagged categories, in the order first seen
    excerpt: str | None = None  # the start of the first flagged text


def _moderation_models(snapshot: dict[str, list[Candidate]]) -> list[str]:
    return sorted(slug for slug, eps in snapshot.items() if eps and MODERATION in eps[0].output_modalities)


async def moderation_candidate(ctx: Any) -> Candidate | None:
    """The endpoint the plugin calls, or None when the catalog has no moderation model the request may use."""
    snapshot = await catalog_snapshot(ctx)
    wanted = settings.GATEWAY_MODERATION_MODEL
    if wanted:
        endpoints = snapshot.get(wanted)
        if not endpoints or MODERATION not in endpoints[0].output_modalities:
            raise GatewayError(
                503,
                f"GATEWAY_MODERATION_MODEL names '{wanted}', which is not a moderation model of the catalog",
                metadata={"error_type": "moderation_unavailable"},
            )
        slugs = [wanted]
    else:
        slugs = _moderation_models(snapshot)
    for slug in slugs[:1]:
        for candidate in snapshot[slug]:
            if all(f.allows(candidate) for f in ctx.endpoint_filters):
                return candidate
    return None


async def call_endpoint(ctx: Any, candidate: Candidate, texts: list[str]) -> EndpointVerdict:
    """The endpoint's verdict on `texts`; a 502 when it cannot give one (the request is not served unscreened)."""
    from inference.handler import candidate_timeouts, upstream_timeouts

    meta = {"provider_name": candidate.provider_slug, "model_slug": candidate.model_slug}
    credentials = await credentials_for(ctx, candidate)
    if not credentials:
        raise GatewayError(502, f"The moderation model {candidate.model_slug} has no provider credentials",
                           metadata={**meta, "error_type": "moderation_failed"})  # fmt: skip
    credential = credentials[0]
    headers = {"Content-Type": "application/json"}
    if credential.api_key:
        headers["Authorization"] = f"Bearer {credential.api_key}"
    request = UpstreamRequest(
        url=candidate.base_url.rstrip("/") + "/moderations",
        headers=headers,
        json={"model": candidate.upstream_model, "input": texts},
    )
    timeouts = candidate_timeouts(upstream_timeouts(), candidate.timeout_overrides)
    try:
        data = await post_json(request, timeouts, credential.api_key)
    except ProviderError as error:
        raise GatewayError(502, f"The moderation endpoint failed: {error.message}",
                           metadata={**meta, "error_type": "moderation_failed"}) from None  # fmt: skip
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or len(results) != len(texts):
        raise GatewayError(502, "The moderation endpoint gave a malformed answer (results)",
                           metadata={**meta, "error_type": "moderation_failed"})  # fmt: skip
    verdict = EndpointVerdict()
    for text, result in zip(texts, results, strict=True):
        if not isinstance(result, dict) or not result.get("flagged"):
            continue
        categories = result.get("categories") if isinstance(result.get("categories"), dict) else {}
        flagged = [name for name, value in categories.items() if value is True] or ["flagged"]
        verdict.categories += [name for name in flagged if name not in verdict.categories]
        verdict.excerpt = verdict.excerpt or text[:EXCERPT]
    return verdict
