"""Reads of the public catalog for GET /models and GET /models/{vendor}/{name}[/endpoints].

What a key sees is what it could route to: every enabled model with at least one enabled endpoint that passes
the key's effective guardrail policy (the same `EndpointFilter` predicates routing applies: allowed and
ignored models and providers, ZDR, training and publication rules). A model none of whose endpoints passes is
absent, and asking for it by name is a 404, exactly as for a model that does not exist.

A model's `pricing`, `top_provider` and `context_length` are those of its first endpoint in routing order
(cheapest first, as `inference.routing` tries them) among the ones the key may use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Q

from accounts.principal import Principal
from inference.models import Endpoint, Model
from inference.pipeline.context import Candidate, EndpointFilter
from inference.routing import candidate_from_endpoint

# Endpoint price fields shown in `pricing`, as (catalog field, public name); a field a catalog does not have is
# skipped, so price-sheet fields added to Endpoint appear here when they are listed.
PRICE_NAMES = (
    ("prompt_price", "prompt"),
    ("completion_price", "completion"),
    ("cached_prompt_price", "input_cache_read"),
    ("cache_write_5m_price", "input_cache_write"),
    ("cache_write_1h_price", "input_cache_write_1h"),
    ("reasoning_price", "internal_reasoning"),
    ("request_price", "request"),
)


@dataclass(slots=True)
class VisibleModel:
    """A model with the endpoints the caller may use, in routing order."""

    model: Model
    endpoints: list[tuple[Endpoint, Candidate]]
    moderated: bool = False  # the key's guardrails filter the content of its requests (to every endpoint)


@dataclass(frozen=True, slots=True)
class _Unrestricted:
    """The policy of a key without guardrails installed: every endpoint, no content filters."""

    endpoint_filters: tuple[EndpointFilter, ...] = ()
    has_filters: bool = False


def _unrestricted(principal: Principal) -> _Unrestricted:
    return _Unrestricted()


# The effective policy of a key (with `endpoint_filters` and `has_filters`), the one its inference requests are
# held to: registered by GuardrailsConfig.ready() (guardrails.key_facts.key_policy).
policy_of: Callable[[Principal], Any] = _unrestricted


def register_key_policy(reader: Callable[[Principal], Any]) -> None:
    global policy_of
    policy_of = reader


def _allowed(policy: Any, candidate: Candidate) -> bool:
    return all(f.allows(candidate) for f in policy.endpoint_filters)


def _routing_key(pair: tuple[Endpoint, Candidate]) -> tuple[Decimal, str]:
    candidate = pair[1]
    return candidate.prompt_price + candidate.completion_price, candidate.provider_slug


def visible_models(principal: Principal, slug: str | None = None) -> list[VisibleModel]:
    """Enabled models (all, or the one named by slug or canonical slug) with the endpoints the key may use."""
    policy = policy_of(principal)
    models = Model.objects.filter(enabled=True)
    if slug is not None:
        models = models.filter(Q(slug=slug) | Q(canonical_slug=slug))
    endpoints = (
        Endpoint.objects.filter(enabled=True, provider__enabled=True, model__in=models)
        .select_related("model", "provider")
        .order_by("model__slug", "provider__slug")
    )
    by_model: dict[Any, VisibleModel] = {}
    for endpoint in endpoints:
        candidate = candidate_from_endpoint(endpoint)
        if not _allowed(policy, candidate):
            continue
        entry = by_model.setdefault(endpoint.model_id, VisibleModel(endpoint.model, [], policy.has_filters))
        entry.endpoints.append((endpoint, candidate))
    visible = sorted(by_model.values(), key=lambda v: v.model.slug)
    for entry in visible:
        entry.endpoints.sort(key=_routing_key)
    return visible


def supported_parameters(entry: VisibleModel) -> list[str]:
    """The union of the parameters the model's visible endpoints declare."""
    names: set[str] = set()
    for endpoint, _ in entry.endpoints:
        names.update(p for p in endpoint.supported_parameters or () if isinstance(p, str))
    return sorted(names)


def get_model(principal: Principal, slug: str) -> VisibleModel | None:
    """The model named `slug` (or its canonical slug) if the key may use it, else None."""
    found = visible_models(principal, slug)
    exact = [entry for entry in found if entry.model.slug == slug]
    return (exact or found or [None])[0]
