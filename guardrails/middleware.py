"""Guardrail enforcement in the inference chain: RegionMiddleware and GuardrailMiddleware.

The effective policy of a key (workspace default ∩ its creator's member guardrail ∩ its own guardrail) is
loaded once per (policy version, key) and kept in process (`PolicyCache`); any change to a guardrail or an
assignment bumps the policy version, so it applies to the next request in every process.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import GatewayError
from gateway_project.db_deadline import db_reader
from gateway_project.policy_cache import PolicyCache
from guardrails.content import RuleResult, TextCache, redact, scan
from guardrails.policy import EffectivePolicy, block_stage, effective_policy, rule_spend_limit, stage
from guardrails.regions import request_region
from guardrails.selectors import rules_for_key
from inference.pipeline.context import Context, SpendLimit
from inference.routers.options import SLUG_ROUTERS
from inference.unknown_members import forwarded
from textscan.texts import has_token_input, opaque_files

_policies = PolicyCache("guardrail-policies")
_scanned = TextCache()  # what the content filters found in recently scanned texts, per organization
_EMPTY = EffectivePolicy()


def _load_policy_sync(key_id, workspace_id, user_id) -> EffectivePolicy:
    return effective_policy(rules_for_key(key_id=key_id, workspace_id=workspace_id, user_id=user_id))


_load_policy = db_reader(_load_policy_sync)


async def policy_for(ctx: Context) -> EffectivePolicy:
    """The effective policy of the request's key (memoized in ctx.guardrail_policy)."""
    if ctx.guardrail_policy is not None:
        return ctx.guardrail_policy
    principal = ctx.principal
    if principal is None:
        return _EMPTY
    policy = await _policies.get(
        ctx.policy_version,
        principal.key_id,
        lambda: _load_policy(principal.key_id, principal.workspace_id, principal.user_id),
        scope=principal.organization_id,
    )
    ctx.guardrail_policy = policy
    return policy


def _refusal(message: str, metadata: dict[str, Any] | None = None) -> GatewayError:
    """A 403; with `X-Service-Metadata: enabled` the consumer adds `service_metadata` with ctx.pipeline."""
    return GatewayError(403, message, metadata=metadata)


class RegionMiddleware:
    """The request's data region (guardrails.regions) → ctx.region; 403 when the effective
    `allowed_data_regions` exclude it."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        ctx.region = request_region(ctx.client_ip, ctx.headers)
        policy = await policy_for(ctx)
        if policy.allowed_regions is not None and ctx.region not in policy.allowed_regions:
            allowed = ", ".join(sorted(policy.allowed_regions)) or "none"
            for rule in policy.rules:
                if rule.allowed_data_regions is not None and ctx.region not in rule.allowed_data_regions:
                    summary = f"region {ctx.region} is not allowed"
                    ctx.pipeline.append(block_stage(rule, summary, "data-region", [ctx.region]))
            raise _refusal(
                f"Requests through the {ctx.region} region are not allowed by a guardrail (allowed: {allowed})",
                {"region": ctx.region, "allowed_data_regions": sorted(policy.allowed_regions)},
            )
        await self.get_response(ctx)


class GuardrailMiddleware:
    """Model/provider/data policy as routing filters, content filters (block, redact, flag), spend limits."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        policy = await policy_for(ctx)
        if not policy.empty:
            self._check_requested_models(ctx, policy)
            ctx.endpoint_filters.extend(policy.endpoint_filters)
            if policy.has_filters:
                self._refuse_unreadable_files(ctx, policy)
                results = scan(ctx.body, policy, _scanned, ctx.principal.organization_id)
                self._apply_content_filters(ctx, results)
            ctx.spend_limits.extend(self._spend_limits(ctx, policy))
        await self.get_response(ctx)

    def _check_requested_models(self, ctx: Context, policy: EffectivePolicy) -> None:
        if not policy.allowed_model_sets and not policy.ignored_models:
            return
        model = ctx.body.get("model")
        if model in SLUG_ROUTERS:
            return  # a router chooses the model among those the guardrails allow (inference/routers)
        if isinstance(model, str) and model and not policy.model_allowed(model):
            self._model_stages(ctx, policy, [model])
            raise _refusal(f"Model '{model}' is not allowed by a guardrail", {"model": model})
        models = [m for m in ctx.body.get("models") or () if isinstance(m, str)]
        if models and not model and not any(policy.model_allowed(m) for m in models):
            self._model_stages(ctx, policy, models)
            names = ", ".join(f"'{m}'" for m in models)
            raise _refusal(f"Models {names} are not allowed by a guardrail", {"models": models})

    @staticmethod
    def _model_stages(ctx: Context, policy: EffectivePolicy, models: list[str]) -> None:
        """The pipeline stage of each guardrail that refuses the requested model(s), as a content block has."""
        for rule in policy.rules:
            refused = [
                m
                for m in models
                if m in rule.ignored_models or (rule.allowed_models is not None and m not in rule.allowed_models)
            ]
            if refused:
                summary = f"model {', '.join(refused)} is not allowed"
                ctx.pipeline.append(block_stage(rule, summary, "model-policy", refused))

    @staticmethod
    def _refuse_unreadable_files(ctx: Context, policy: EffectivePolicy) -> None:
        """A file the filters cannot read (a PDF, a file by id or URL), token ids (an /embeddings input), or a member
        the gateway does not know (forwarded as sent to a same-format upstream) would carry text past a block or
        redact filter: 403 naming it. Flag-only filters let it through (they only observe)."""
        enforcing = [r for r in policy.rules if any(f.action in ("block", "redact") for f in r.filters)]
        if enforcing and has_token_input(ctx.body):  # an /embeddings input of token ids
            guardrails = ", ".join(f"'{r.name}'" for r in enforcing)
            raise _refusal(
                f"Content filters of guardrail {guardrails} cannot read token ids: send the input as text",
                {"field": "input", "guardrail_ids": [str(r.id) for r in enforcing]},
            )
        if enforcing and (members := forwarded(ctx.body)):
            listed = ", ".join(f"'{name}'" for name in members)
            guardrails = ", ".join(f"'{r.name}'" for r in enforcing)
            raise _refusal(
                f"Content filters of guardrail {guardrails} cannot read {listed}: a member the gateway does not "
                "know is forwarded as sent, unread; send the request without it",
                {"fields": list(members), "guardrail_ids": [str(r.id) for r in enforcing]},
            )
        if enforcing and (names := opaque_files(ctx.body)):
            listed = ", ".join(f"'{n}'" for n in names)
            guardrails = ", ".join(f"'{r.name}'" for r in enforcing)
            raise _refusal(
                f"Content filters of guardrail {guardrails} cannot read input_file {listed}: send its text inline "
                "(a data: URL of a text type) or as input_text",
                {"files": names, "guardrail_ids": [str(r.id) for r in enforcing]},
            )

    def _apply_content_filters(self, ctx: Context, results: list[RuleResult]) -> None:
        blocked = [r for r in results if r.action == "block"]
        for result in results:
            ctx.pipeline.append(self._content_stage(result))
        if blocked:
            patterns = list(dict.fromkeys(p for r in blocked for p in r.patterns("block")))
            names = ", ".join(f"'{r.rule.name}'" for r in blocked)
            raise _refusal(f"Request blocked by guardrail {names}: content matched {len(patterns)} pattern(s)",
                           {"patterns": patterns, "guardrail_ids": [str(r.rule.id) for r in blocked]})  # fmt: skip
        if any(r.patterns("redact") for r in results):
            redact(results)

    @staticmethod
    def _content_stage(result: RuleResult) -> dict:
        rule = result.rule
        engines = list(dict.fromkeys(f.engine for f in rule.filters))
        patterns = result.patterns()
        action = result.action
        if action == "none":
            summary = "no content filter matched"
        else:
            counts = {a: len(result.patterns(a)) for a in ("block", "redact", "flag")}
            parts = [f"{verb} {counts[a]}" for a, verb in (("block", "blocked"), ("redact", "redacted"),
                                                             ("flag", "flagged")) if counts[a]]  # fmt: skip
            summary = ", ".join(parts) + " pattern(s)"
        return stage(rule, summary, action, action != "none", engines, patterns)

    @staticmethod
    def _spend_limits(ctx: Context, policy: EffectivePolicy) -> list[SpendLimit]:
        principal = ctx.principal
        key_hash, user_id = principal.key_hash, principal.user_id
        limits = (rule_spend_limit(rule, key_hash=key_hash, user_id=user_id) for rule in policy.rules)
        return [limit for limit in limits if limit is not None]
