"""Filters, sort and pagination of GET /models (and /models/count, /embeddings/models) over the visible models.

A model's price, context length and age are those of its top endpoint (the first the key may use in routing
order, as `pricing` and `top_provider` show them); its providers, regions and ZDR are those of any endpoint
the key may use. Prices are compared in USD per million tokens, as the public router API takes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from accounts.principal import Principal
from inference.catalog_selectors import VisibleModel, supported_parameters, visible_models
from inference.endpoint_traffic import endpoint_traffic, model_popularity

MILLION = Decimal(1_000_000)
REGION_NAMES = {"eu": "europe", "us": "us"}
TRAFFIC_SORTS = ("most-popular", "top-weekly", "throughput-high-to-low", "latency-low-to-high")
SORTS = ("newest", "pricing-low-to-high", "pricing-high-to-low", "context-high-to-low", *TRAFFIC_SORTS)


@dataclass(frozen=True, slots=True)
class ModelQuery:
    """What GET /models was asked: every field None/empty means no filter; `limit` None means every model."""

    supported_parameters: tuple[str, ...] = ()
    output_modalities: frozenset[str] | None = None
    input_modalities: frozenset[str] = frozenset()
    q: str = ""
    context: int | None = None
    min_price: Decimal | None = None
    max_price: Decimal | None = None
    min_output_price: Decimal | None = None
    max_output_price: Decimal | None = None
    model_authors: frozenset[str] = frozenset()
    providers: frozenset[str] = frozenset()
    zdr: bool = False
    region: str | None = None
    min_age_days: int | None = None
    max_age_days: int | None = None
    sort: str | None = None
    offset: int = 0
    limit: int | None = None


def context_length(entry: VisibleModel) -> int:
    """The top endpoint's context length, else the model's."""
    return entry.endpoints[0][1].context_length or entry.model.context_length


def _per_million(value: Decimal) -> Decimal:
    return value * MILLION


def _between(value: Decimal | int, low, high) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _age_days(entry: VisibleModel, now: datetime) -> int:
    return (now - entry.model.created_at).days


def matches(entry: VisibleModel, query: ModelQuery, now: datetime | None = None) -> bool:
    model, top = entry.model, entry.endpoints[0][1]
    candidates = [candidate for _, candidate in entry.endpoints]
    checks = (
        query.output_modalities is None or bool(query.output_modalities & set(model.output_modalities or ())),
        query.input_modalities <= set(model.input_modalities or ()),
        not query.supported_parameters or set(query.supported_parameters) <= set(supported_parameters(entry)),
        not query.q or query.q in model.slug.lower() or query.q in (model.name or "").lower(),
        query.context is None or context_length(entry) >= query.context,
        _between(_per_million(top.prompt_price), query.min_price, query.max_price),
        _between(_per_million(top.completion_price), query.min_output_price, query.max_output_price),
        not query.model_authors or model.vendor.lower() in query.model_authors,
        not query.providers
        or any({c.provider_slug.lower(), c.provider_name.lower()} & query.providers for c in candidates),
        not query.zdr or any(c.zdr for c in candidates),
        query.region is None or any(REGION_NAMES[query.region] in c.regions for c in candidates),
    )
    if not all(checks):
        return False
    if query.min_age_days is None and query.max_age_days is None:
        return True
    return _between(_age_days(entry, now or timezone.now()), query.min_age_days, query.max_age_days)


def _price(entry: VisibleModel) -> Decimal:
    top = entry.endpoints[0][1]
    return (top.prompt_price + top.completion_price) / 2


def _traffic_key(models: list[VisibleModel], sort: str):
    """The sort key of a traffic sort: models without traffic in the window last, then by slug."""
    if sort in ("most-popular", "top-weekly"):
        usage = model_popularity()
        index = 0 if sort == "most-popular" else 1  # requests, or tokens processed
        return lambda e: (e.model.slug not in usage, -usage.get(e.model.slug, (0, 0))[index])
    traffic = endpoint_traffic(entry.endpoints[0][0].id for entry in models)
    figure = "latency" if sort == "latency-low-to-high" else "throughput"
    sign = 1 if figure == "latency" else -1

    def key(entry: VisibleModel):
        stats = getattr(traffic[entry.endpoints[0][0].id], figure)
        return (stats is None, sign * stats["p50"] if stats else 0)

    return key


def ordered(models: list[VisibleModel], sort: str | None) -> list[VisibleModel]:
    """The models in the order `sort` asks (already sorted by slug: every tie keeps slug order)."""
    if sort is None:
        return models
    if sort == "newest":
        return sorted(models, key=lambda e: e.model.created_at, reverse=True)
    if sort == "pricing-low-to-high":
        return sorted(models, key=_price)
    if sort == "pricing-high-to-low":
        return sorted(models, key=_price, reverse=True)
    if sort == "context-high-to-low":
        return sorted(models, key=context_length, reverse=True)
    return sorted(models, key=_traffic_key(models, sort))


def page(models: list[VisibleModel], query: ModelQuery) -> list[VisibleModel]:
    end = None if query.limit is None else query.offset + query.limit
    return models[query.offset : end]


def list_models(principal: Principal, query: ModelQuery) -> tuple[list[VisibleModel], int]:
    """One page of the models the key may use that match the query, in its order, and how many match."""
    found = ordered([entry for entry in visible_models(principal) if matches(entry, query)], query.sort)
    return page(found, query), len(found)
