"""The effective guardrail policy of a request: workspace default ∩ member guardrail ∩ key guardrail.

Pure data, built once per (policy version, key) and cached by the middleware (DECISIONS.md §3): allow-lists
intersect (each non-null list must admit a candidate), ignore-lists unite, restricting booleans win,
`allowed_data_regions` intersect over non-null values, content filters all apply, each spending limit is
checked on its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

from gateway_project.regex import compile_pattern, compile_screen
from inference.pipeline.context import Candidate, EndpointFilter, SpendLimit
from textscan.detectors import DETECTORS, LABELS

ACTION_RANK = {"flag": 1, "redact": 2, "block": 3}
ZDR_LETTERS = ("a", "b", "c", "d")
DEFAULT_ZDR_VENDORS = {"a": "openai", "b": "anthropic", "c": "google", "d": "x-ai"}


@dataclass(frozen=True, slots=True)
class ContentFilter:
    """One built-in or custom filter of one guardrail, ready to run."""

    engine: str  # a built-in slug, or "regex"
    pattern: str  # the built-in slug, or the regular expression
    action: str  # block | redact | flag
    label: str
    user_only: bool
    find: Callable[[str], list[tuple[int, int]]]
    screen: Any = None  # an RE2 Set of all custom patterns of the guardrail: one pass says which can match
    screen_index: int = -1


@dataclass(frozen=True, slots=True)
class GuardrailRule:
    """A snapshot of one guardrail that applies to the request, with the scope it applies through."""

    id: uuid.UUID
    name: str
    scope: str  # workspace | member | api-key
    allowed_data_regions: frozenset[str] | None
    allowed_models: frozenset[str] | None  # expanded with catalog aliases (slug <-> canonical slug)
    allowed_providers: frozenset[str] | None
    ignored_models: frozenset[str]
    ignored_providers: frozenset[str]
    filters: tuple[ContentFilter, ...]
    enable_free_model_publication: bool
    enable_free_model_training: bool
    enable_paid_model_training: bool
    zdr: dict[str, bool]  # letter a..d and "other" -> enforce
    include_byok_in_budgets: bool
    limit_usd: Decimal | None
    reset_interval: str | None


def rule_spend_limit(rule: GuardrailRule, *, key_hash: str, user_id: uuid.UUID | None) -> SpendLimit | None:
    """The guardrail's `limit_usd` as the SpendLimit of one key's traffic (None without a limit).

    A member guardrail counts the spend of the key's creator (every key of that user); a workspace default or
    key guardrail counts the key's own spend (DECISIONS §3: the limit caps each key or member it applies to).
    """
    if rule.limit_usd is None:
        return None
    subject = f"user:{user_id}" if rule.scope == "member" and user_id is not None else f"key:{key_hash}"
    return SpendLimit(
        scope="guardrail",
        scope_id=f"{rule.id}:{subject}",
        name=f"guardrail '{rule.name}'",
        limit_usd=Decimal(rule.limit_usd),
        interval=rule.reset_interval or "lifetime",
        include_byok=rule.include_byok_in_budgets,
    )


def zdr_vendor_letters() -> dict[str, str]:
    """Model vendor -> letter (a..d) from settings.GATEWAY_ZDR_VENDOR_A..D."""
    letters = {}
    for letter in ZDR_LETTERS:
        vendor = getattr(settings, f"GATEWAY_ZDR_VENDOR_{letter.upper()}", None) or DEFAULT_ZDR_VENDORS[letter]
        letters[vendor.lower()] = letter
    return letters


def build_filters(builtins: list[dict] | None, customs: list[dict] | None) -> tuple[ContentFilter, ...]:
    filters = []
    for entry in builtins or ():
        slug = entry["slug"]
        user_only = slug == "regex-prompt-injection" and entry.get("scan_scope") == "user_only"
        filters.append(ContentFilter(slug, slug, entry["action"], LABELS[slug], user_only, DETECTORS[slug]))
    customs = list(customs or ())
    screen = compile_screen([entry["pattern"] for entry in customs]) if len(customs) > 1 else None
    for index, entry in enumerate(customs):
        compiled = compile_pattern(entry["pattern"])
        filters.append(
            ContentFilter(
                "regex", entry["pattern"], entry["action"], entry.get("label") or "[REDACTED]", False,
                lambda text, _p=compiled: [m.span() for m in _p.finditer(text)], screen, index,
            )
        )  # fmt: skip
    return tuple(filters)


@dataclass(frozen=True, slots=True)
class EffectivePolicy:
    """What all applying guardrails decide together, plus the rules themselves for the pipeline stages."""

    rules: tuple[GuardrailRule, ...] = ()
    allowed_regions: frozenset[str] | None = None
    endpoint_filters: tuple[EndpointFilter, ...] = ()
    allowed_model_sets: tuple[frozenset[str], ...] = ()
    ignored_models: frozenset[str] = frozenset()
    has_filters: bool = False

    @property
    def empty(self) -> bool:
        return not self.rules

    def model_allowed(self, slug: str) -> bool:
        """Whether a requested model slug (or canonical slug) passes every allow-list and no ignore-list."""
        if slug in self.ignored_models:
            return False
        return all(slug in allowed for allowed in self.allowed_model_sets)


def stage(rule: Any, summary: str, action: str, detected: bool, engines: list[str], patterns: list[str]) -> dict:
    """A guardrail's `service_metadata.pipeline` stage: what it did to the request and what it found."""
    return {
        "type": "guardrail",
        "name": rule.name,
        "guardrail_id": str(rule.id),
        "guardrail_scope": rule.scope,
        "summary": summary,
        "data": {"action": action, "detected": detected, "engines": engines, "patterns": patterns},
    }


def block_stage(rule: GuardrailRule, summary: str, engine: str, patterns: list[str]) -> dict[str, Any]:
    """The stage of a guardrail that blocked the request (as a content block shows)."""
    return stage(rule, summary, "block", True, [engine], patterns)


def _stages(rules: tuple[GuardrailRule, ...], summary: str, engine: str, patterns: Any = ()) -> tuple[dict, ...]:
    return tuple(block_stage(rule, summary, engine, sorted(patterns)) for rule in rules)


def _endpoint_filters(rules: tuple[GuardrailRule, ...]) -> list[EndpointFilter]:
    filters: list[EndpointFilter] = []
    for rule in rules:
        if rule.allowed_models is not None:
            allowed = rule.allowed_models
            filters.append(
                EndpointFilter(
                    f"model not allowed by guardrail '{rule.name}'",
                    lambda c, a=allowed: c.model_slug in a or c.canonical_slug in a,
                    _stages((rule,), "no requested model is allowed", "model-policy", allowed),
                )
            )
        if rule.allowed_providers is not None:
            providers = rule.allowed_providers
            filters.append(
                EndpointFilter(
                    f"provider not allowed by guardrail '{rule.name}'",
                    lambda c, p=providers: c.provider_slug in p,
                    _stages((rule,), "no endpoint of an allowed provider", "provider-policy", providers),
                )
            )
    ignored_models = frozenset().union(*(r.ignored_models for r in rules))
    if ignored_models:
        ignoring = tuple(r for r in rules if r.ignored_models)
        filters.append(
            EndpointFilter(
                "model ignored by guardrail",
                lambda c: c.model_slug not in ignored_models and c.canonical_slug not in ignored_models,
                _stages(ignoring, "the requested models are ignored", "model-policy", ignored_models),
            )
        )
    ignored_providers = frozenset().union(*(r.ignored_providers for r in rules))
    if ignored_providers:
        ignoring = tuple(r for r in rules if r.ignored_providers)
        filters.append(
            EndpointFilter(
                "provider ignored by guardrail",
                lambda c: c.provider_slug not in ignored_providers,
                _stages(ignoring, "every endpoint's provider is ignored", "provider-policy", ignored_providers),
            )
        )
    filters.extend(_data_policy_filters(rules))
    return filters


def _data_policy_filters(rules: tuple[GuardrailRule, ...]) -> list[EndpointFilter]:
    filters: list[EndpointFilter] = []
    zdr = {key: any(r.zdr[key] for r in rules) for key in (*ZDR_LETTERS, "other")}
    if any(zdr.values()):
        letters = zdr_vendor_letters()

        def zdr_allows(c: Candidate) -> bool:
            return c.zdr or not zdr[letters.get(c.vendor.lower(), "other")]

        requiring = tuple(r for r in rules if any(r.zdr.values()))
        stages = _stages(requiring, "no endpoint keeps zero data", "data-policy")
        filters.append(EndpointFilter("zero data retention required by guardrail", zdr_allows, stages))
    if not all(r.enable_paid_model_training for r in rules):
        stages = _stages(tuple(r for r in rules if not r.enable_paid_model_training), "paid endpoints train on data",
                         "data-policy")  # fmt: skip
        filters.append(
            EndpointFilter(
                "paid endpoint trains on data (guardrail)", lambda c: c.is_free or not c.trains_on_data, stages
            )
        )
    if not all(r.enable_free_model_training for r in rules):
        stages = _stages(tuple(r for r in rules if not r.enable_free_model_training), "free endpoints train on data",
                         "data-policy")  # fmt: skip
        filters.append(
            EndpointFilter(
                "free endpoint trains on data (guardrail)", lambda c: not (c.is_free and c.trains_on_data), stages
            )
        )
    if not all(r.enable_free_model_publication for r in rules):
        stages = _stages(tuple(r for r in rules if not r.enable_free_model_publication),
                         "free endpoints publish prompts", "data-policy")  # fmt: skip
        filters.append(
            EndpointFilter(
                "free endpoint publishes prompts (guardrail)", lambda c: not (c.is_free and c.publishes_prompts), stages
            )
        )
    return filters


def effective_policy(rules: list[GuardrailRule]) -> EffectivePolicy:
    """Combine the applying guardrails (in order workspace, member, api-key) into one policy."""
    if not rules:
        return EffectivePolicy()
    rules_t = tuple(rules)
    regions = None
    for rule in rules_t:
        if rule.allowed_data_regions is not None:
            regions = rule.allowed_data_regions if regions is None else regions & rule.allowed_data_regions
    return EffectivePolicy(
        rules=rules_t,
        allowed_regions=regions,
        endpoint_filters=tuple(_endpoint_filters(rules_t)),
        allowed_model_sets=tuple(r.allowed_models for r in rules_t if r.allowed_models is not None),
        ignored_models=frozenset().union(*(r.ignored_models for r in rules_t)),
        has_filters=any(r.filters for r in rules_t),
    )
