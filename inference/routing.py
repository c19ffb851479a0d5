"""Candidate endpoints of a request, in the order they are tried.

`resolve_candidates(ctx)` applies, in this order: the requested model (`model`, then the `models` fallbacks; a
fallback the catalog does not know is skipped and listed in `service_metadata.skipped_models`, an unknown first
model is a 404), the provider preferences (`only`, `ignore`, `data_collection`, `zdr`, `require_parameters`,
`max_price`), every `ctx.endpoint_filters` predicate (guardrails, BYOK...), the ordering (`sort`, `order`, sticky
session) and `allow_fallbacks`. The catalog is read from an in-process snapshot cached per policy version. The
result is memoized in `ctx.candidates`.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.db_deadline import db_reader
from gateway_project.policy_cache import PolicyCache
from inference import credentials
from inference.endpoint_traffic import clear_traffic_cache
from inference.models import Endpoint
from inference.pipeline.context import Candidate, Context
from inference.response import SKIPPED_MODELS
from inference.router_parameters import required_names, supports_all
from inference.routers.quality import as_pairs
from inference.routers.route import remember_pin, route_model
from inference.routers.select import clear_pins
from inference.routing_features import feature_checks

_catalog = PolicyCache("catalog")
MILLION = Decimal(1_000_000)
STICKY_SESSIONS_MAX = 100_000
MODERATION = "moderation"  # the output modality of moderation models (POST /moderations, the moderation plugin)
EMBEDDINGS = "embeddings"  # the output modality of embedding models, and the ingress format of POST /embeddings
# Sticky sessions, keyed by (organization id, session id): one organization's session ids never steer
# another's routing. Session ids are at most 256 characters (the body's and the header's alike).
_sticky: OrderedDict[tuple[Any, str], Any] = OrderedDict()


def candidate_from_endpoint(endpoint: Endpoint) -> Candidate:
    model, provider = endpoint.model, endpoint.provider
    return Candidate(
        endpoint_id=endpoint.id,
        model_slug=model.slug,
        canonical_slug=model.canonical_slug or model.slug,
        vendor=model.vendor,
        public=model.public,
        provider_slug=provider.slug,
        provider_name=provider.name,
        api_format=provider.api_format,
        base_url=provider.base_url,
        platform_key_env=provider.api_key_env,
        upstream_model=endpoint.upstream_model,
        prompt_price=endpoint.prompt_price,
        completion_price=endpoint.completion_price,
        cached_prompt_price=endpoint.cached_prompt_price,
        is_free=endpoint.is_free,
        context_length=endpoint.context_length or model.context_length or None,
        max_output_tokens=endpoint.max_output_tokens,
        supported_parameters=tuple(endpoint.supported_parameters or ()),
        zdr=provider.zdr,
        trains_on_data=provider.trains_on_data,
        publishes_prompts=provider.publishes_prompts,
        regions=tuple(provider.regions or ()),
        input_modalities=tuple(model.input_modalities or ()),
        output_modalities=tuple(model.output_modalities or ()),
        cache_write_5m_price=endpoint.cache_write_5m_price,
        cache_write_1h_price=endpoint.cache_write_1h_price,
        reasoning_price=endpoint.reasoning_price,
        request_price=endpoint.request_price or Decimal(0),
        tier_multipliers=tuple((str(k), Decimal(str(v))) for k, v in (endpoint.tier_multipliers or {}).items()),
        max_image_tokens=endpoint.max_image_tokens,
        max_audio_tokens=endpoint.max_audio_tokens,
        max_file_tokens=endpoint.max_file_tokens,
        timeout_overrides=tuple(sorted((provider.timeouts or {}).items())),
        quality_scores=as_pairs(model.quality_scores),
    )


def load_catalog_snapshot() -> dict[str, list[Candidate]]:
    """Model slug (and canonical slug) → its enabled endpoints (sync, one query)."""
    endpoints = Endpoint.objects.filter(enabled=True, model__enabled=True, provider__enabled=True).select_related(
        "model", "provider"
    )
    by_slug: dict[str, list[Candidate]] = {}
    for endpoint in endpoints.order_by("model__slug", "provider__slug"):
        by_slug.setdefault(endpoint.model.slug, []).append(candidate_from_endpoint(endpoint))
    for candidates in list(by_slug.values()):
        candidates.sort(key=_price_key)  # stable: equal prices keep the provider slug order
        by_slug.setdefault(candidates[0].canonical_slug, candidates)
    return by_slug


_load_snapshot = db_reader(load_catalog_snapshot)


async def catalog_snapshot(ctx: Context) -> dict[str, list[Candidate]]:
    return await _catalog.get(ctx.policy_version, "all", _load_snapshot)


def clear_caches() -> None:
    """Forget the catalog snapshot and sticky sessions (tests: the database was reset under the process)."""
    _catalog.clear()
    _sticky.clear()
    _variants.clear()
    clear_pins()
    clear_traffic_cache()


def requested_models(body: dict[str, Any]) -> list[str]:
    """`model` first, then the `models` fallbacks, without duplicates."""
    names: list[str] = []
    if body.get("model"):
        names.append(body["model"])
    for name in body.get("models") or ():
        if name not in names:
            names.append(name)
    return names


def _price_key(candidate: Candidate) -> Decimal:
    return candidate.prompt_price + candidate.completion_price


def _preference_filters(prefs: dict[str, Any], body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(reason, predicate) pairs from the `provider` preferences."""
    filters: list[tuple[str, Any]] = []
    if prefs.get("only"):
        only = set(prefs["only"])
        filters.append(("excluded by provider.only", lambda c: c.provider_slug in only))
    if prefs.get("ignore"):
        ignore = set(prefs["ignore"])
        filters.append(("excluded by provider.ignore", lambda c: c.provider_slug not in ignore))
    if prefs.get("data_collection") == "deny":
        filters.append(("provider.data_collection is deny", lambda c: not c.trains_on_data and not c.publishes_prompts))
    if prefs.get("zdr"):
        filters.append(("provider.zdr requires zero data retention", lambda c: c.zdr))
    if prefs.get("require_parameters"):
        used = required_names(body)
        filters.append(
            (
                f"provider.require_parameters: no endpoint supports all of {', '.join(used)}",
                lambda c: supports_all(c, used),
            )
        )
    max_price = prefs.get("max_price") or {}
    if "prompt" in max_price:
        limit = Decimal(str(max_price["prompt"]))
        filters.append(("above provider.max_price.prompt", lambda c: c.prompt_price * MILLION <= limit))
    if "completion" in max_price:
        limit = Decimal(str(max_price["completion"]))
        filters.append(("above provider.max_price.completion", lambda c: c.completion_price * MILLION <= limit))
    if "request" in max_price:  # USD per request (the endpoint's fixed fee), not per million tokens
        fee = Decimal(str(max_price["request"]))
        filters.append(("above provider.max_price.request", lambda c: c.request_price <= fee))
    return filters


def _apply_filters(ctx: Context, candidates: list[Candidate]) -> list[Candidate]:
    for field, reason, allows in feature_checks(ctx.body, ctx.stream, ctx.ingress_format):
        candidates = [c for c in candidates if allows(c)]
        if not candidates:
            raise validation_error(field, reason)
    prefs = ctx.body.get("provider") or {}
    checks = [(reason, allows, ()) for reason, allows in _preference_filters(prefs, ctx.body)]
    checks.extend((f.reason, f.allows, f.stages) for f in ctx.endpoint_filters)
    for reason, allows, stages in checks:
        kept = [c for c in candidates if allows(c)]
        if not kept:
            ctx.pipeline.extend(stages)  # a guardrail's filter: its stage shows, as a content block's does
            raise GatewayError(
                404,
                f"No endpoint available for {', '.join(requested_models(ctx.body))}: {reason}",
                metadata={"reason": reason},
            )
        candidates = kept
    return candidates


def _sort_settings(body: dict[str, Any]) -> tuple[str, str]:
    """(sort by, partition): `provider.sort`, or the deprecated `route` alias."""
    sort = (body.get("provider") or {}).get("sort")
    if isinstance(sort, dict):
        return sort.get("by") or "price", sort.get("partition") or "model"
    if isinstance(sort, str):
        return sort, "model"
    route = body.get("route")
    if route == "sort":
        return "price", "none"
    return "", "model"


def _order(ctx: Context, candidates: list[Candidate], model_rank: dict[str, int]) -> list[Candidate]:
    body = ctx.body
    prefs = body.get("provider") or {}
    by, partition = _sort_settings(body)
    # The snapshot lists each model's endpoints cheapest first and candidates come model by model, so the
    # default order (and `sort: price` within each model) is already there; partition `none` sorts across.
    if by == "price" and partition == "none":
        candidates = sorted(candidates, key=_price_key)
    order = prefs.get("order")
    if order:
        rank = {slug: i for i, slug in enumerate(order)}
        candidates = sorted(candidates, key=lambda c: (model_rank[c.model_slug], rank.get(c.provider_slug, len(rank))))
    elif _sticky_id(ctx):
        candidates = _sticky_first(_session_key(ctx), candidates)
    if prefs.get("allow_fallbacks") is False:
        candidates = _without_provider_fallbacks(candidates, order)
    return candidates


def _without_provider_fallbacks(candidates: list[Candidate], order: list[str] | None) -> list[Candidate]:
    """Per requested model: only the `order` providers, or only the first candidate when there is no order."""
    kept: list[Candidate] = []
    seen_models: set[str] = set()
    for candidate in candidates:
        if order:
            if candidate.provider_slug in order:
                kept.append(candidate)
        elif candidate.model_slug not in seen_models:
            kept.append(candidate)
        seen_models.add(candidate.model_slug)
    return kept


def _sticky_id(ctx: Context) -> str:
    """What keeps a conversation on one endpoint: the session id, else the `prompt_cache_key` (the same key, the
    same endpoint, so the provider's prompt cache is hit on every format)."""
    key = ctx.body.get("prompt_cache_key")
    return ctx.session_id or (f"prompt_cache_key:{key}" if isinstance(key, str) and key else "")


def _session_key(ctx: Context) -> tuple[Any, str]:
    principal = ctx.principal
    return (principal.organization_id if principal is not None else None, _sticky_id(ctx))


def _sticky_first(key: tuple[Any, str], candidates: list[Candidate]) -> list[Candidate]:
    endpoint_id = _sticky.get(key)
    if endpoint_id is None:
        return candidates
    for index, candidate in enumerate(candidates):
        if candidate.endpoint_id == endpoint_id:
            return [candidate, *candidates[:index], *candidates[index + 1 :]]
    return candidates


def remember_session(ctx: Context, candidate: Candidate) -> None:
    """Sticky routing: the next request of this session (in this organization) tries the same endpoint first."""
    remember_pin(ctx)
    if not _sticky_id(ctx):
        return
    key = _session_key(ctx)
    _sticky[key] = candidate.endpoint_id
    _sticky.move_to_end(key)
    if len(_sticky) > STICKY_SESSIONS_MAX:
        _sticky.popitem(last=False)


_variants: dict[tuple[int, uuid.UUID, bool], Candidate] = {}
_VARIANTS_MAX = 10_000


def _declared_variants(
    ctx: Context, candidate: Candidate, declared_zdr: Mapping[str, frozenset[bool]] | None
) -> list[Candidate]:
    """The candidate as the organization's BYOK keys declare it (`declared_zdr` differing from the catalog's),
    built once per policy version and endpoint."""
    values = declared_zdr.get(candidate.provider_slug) if declared_zdr else None
    if not values:
        return []
    variants = []
    for value in sorted(values, reverse=True):
        if value == candidate.zdr:
            continue
        key = (ctx.policy_version, candidate.endpoint_id, value)
        variant = _variants.get(key)
        if variant is None:
            if len(_variants) >= _VARIANTS_MAX:
                _variants.clear()
            variant = _variants[key] = replace(candidate, zdr=value, byok_declared_zdr=value)
        variants.append(variant)
    return variants


def _wrong_kind(body: dict[str, Any], name: str, embeddings: bool) -> GatewayError:
    """400: an embeddings model asked for text, or a text model asked for embeddings."""
    field = "model" if body.get("model") == name else "models"
    if embeddings:
        return validation_error(field, f"'{name}' is not an embeddings model")
    return validation_error(field, f"'{name}' is an embeddings model; use POST /api/v1/embeddings")


def select_candidates(
    ctx: Context,
    snapshot: dict[str, list[Candidate]],
    declared_zdr: Mapping[str, frozenset[bool]] | None = None,
    names: list[str] | None = None,
) -> list[Candidate]:
    """The candidates of the request from a catalog snapshot, filtered and ordered (no I/O).

    `names` replaces the request's models (and its router). `declared_zdr` (provider slug -> the `declared_zdr`
    values of the organization's BYOK keys for it) adds, before each endpoint of such a provider, the endpoint as
    those keys declare it: the filters (guardrail ZDR, `provider.zdr`) then judge the declaration, and
    byok.routing tries that variant with those keys only.
    """
    embeddings = ctx.ingress_format == EMBEDDINGS
    if names is None:  # `names`: other models under the request's filters (the fusion plugin's panel)
        chosen = None if embeddings else route_model(ctx, snapshot, _usable_by(ctx, declared_zdr))
        names = [chosen] if chosen else requested_models(ctx.body)
    if not names:
        raise validation_error("model", "is required (or models)")
    candidates: list[Candidate] = []
    model_rank: dict[str, int] = {}
    if names[0] not in snapshot:
        raise GatewayError(404, f"Model '{names[0]}' does not exist", metadata={"model": names[0]})
    known = [name for name in names if name in snapshot]
    skipped = [name for name in names if name not in snapshot]
    if skipped:  # unknown fallbacks (`models`) are skipped while one requested model exists; the answer says so
        ctx.extras[SKIPPED_MODELS] = skipped
    for name in known:
        endpoints = snapshot[name]
        if (EMBEDDINGS in endpoints[0].output_modalities) != embeddings:
            raise _wrong_kind(ctx.body, name, embeddings)
        if MODERATION in endpoints[0].output_modalities:  # called by the moderation plugin only
            field = "model" if ctx.body.get("model") == name else "models"
            raise validation_error(field, f"'{name}' is a moderation model; use it with the moderation plugin")
        for candidate in endpoints:
            if candidate.model_slug not in model_rank:
                model_rank[candidate.model_slug] = len(model_rank)
            for variant in (*_declared_variants(ctx, candidate, declared_zdr), candidate):
                if variant not in candidates:
                    candidates.append(variant)
    return _order(ctx, _apply_filters(ctx, candidates), model_rank)


def _usable_by(ctx: Context, declared_zdr: Mapping[str, frozenset[bool]] | None):
    """For the routers: None when an endpoint (or its BYOK-declared variant) passes every filter of the request,
    else the reason of the first filter that refuses it."""
    checks = [(reason, allows) for _, reason, allows in feature_checks(ctx.body, ctx.stream, ctx.ingress_format)]
    checks.extend(_preference_filters(ctx.body.get("provider") or {}, ctx.body))
    checks.extend((f.reason, f.allows) for f in ctx.endpoint_filters)

    def usable(candidate: Candidate) -> str | None:
        reason = None
        for variant in (*_declared_variants(ctx, candidate, declared_zdr), candidate):
            reason = next((why for why, allows in checks if not allows(variant)), None)
            if reason is None:
                return None
        return reason

    return usable


async def candidates_of(ctx: Context, slug: str) -> list[Candidate]:
    """The candidates of another model `slug` under every filter of the request (not memoized)."""
    snapshot = await catalog_snapshot(ctx)
    return select_candidates(
        ctx, snapshot, await credentials.organization_keys.declared_zdr_by_provider(ctx), names=[slug]
    )


async def resolve_candidates(ctx: Context) -> list[Candidate]:
    """The endpoints to try for this request, in order (memoized in ctx.candidates)."""
    if ctx.candidates is None:
        snapshot = await catalog_snapshot(ctx)
        ctx.candidates = select_candidates(
            ctx, snapshot, await credentials.organization_keys.declared_zdr_by_provider(ctx)
        )
    return ctx.candidates
