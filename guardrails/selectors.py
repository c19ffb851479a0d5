"""Reads of the guardrails app: records for the API, and the rules that apply to a key for the data plane."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from accounts.models import Workspace, default_guardrail_id_for
from guardrails.models import Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment
from guardrails.policy import ZDR_LETTERS, GuardrailRule, build_filters
from inference.models import Model


def guardrail_list(*, organization_id: uuid.UUID, workspace: Workspace | None = None) -> QuerySet[Guardrail]:
    queryset = Guardrail.objects.filter(organization_id=organization_id).select_related("workspace")
    return queryset.filter(workspace=workspace) if workspace is not None else queryset


def workspace_of_default_guardrail(*, organization_id: uuid.UUID, guardrail_id: uuid.UUID) -> Workspace | None:
    """The workspace whose (possibly not yet materialized) default guardrail has this id."""
    for workspace in Workspace.objects.filter(organization_id=organization_id).only("id", "name", "organization_id"):
        if default_guardrail_id_for(workspace.id) == guardrail_id:
            return workspace
    return None


def key_assignments(*, organization_id: uuid.UUID, guardrail: Guardrail | None = None):
    queryset = GuardrailKeyAssignment.objects.filter(guardrail__organization_id=organization_id).select_related(
        "api_key", "assigned_by"
    )
    return queryset.filter(guardrail=guardrail) if guardrail is not None else queryset


def member_assignments(*, organization_id: uuid.UUID, guardrail: Guardrail | None = None):
    queryset = GuardrailMemberAssignment.objects.filter(guardrail__organization_id=organization_id).select_related(
        "user", "assigned_by"
    )
    return queryset.filter(guardrail=guardrail) if guardrail is not None else queryset


def _model_aliases() -> dict[str, set[str]]:
    """Every model slug and canonical slug -> all names of the same model."""
    aliases: dict[str, set[str]] = {}
    for slug, canonical in Model.objects.values_list("slug", "canonical_slug"):
        group = aliases.setdefault(canonical, {canonical})
        group.add(slug)
        aliases[slug] = group
    return aliases


def _expand(names: list[str] | None, aliases: dict[str, set[str]]) -> frozenset[str] | None:
    if names is None:
        return None
    expanded: set[str] = set()
    for name in names:
        expanded.add(name)
        expanded |= aliases.get(name, set())
    return frozenset(expanded)


def rule_from_guardrail(guardrail: Guardrail, scope: str, aliases: dict[str, set[str]]) -> GuardrailRule:
    regions = guardrail.allowed_data_regions
    providers = guardrail.allowed_providers
    return GuardrailRule(
        id=guardrail.id,
        name=guardrail.workspace.name if guardrail.is_default else guardrail.name,
        scope=scope,
        allowed_data_regions=frozenset(regions) if regions is not None else None,
        allowed_models=_expand(guardrail.allowed_models, aliases),
        allowed_providers=frozenset(providers) if providers is not None else None,
        ignored_models=_expand(guardrail.ignored_models, aliases) or frozenset(),
        ignored_providers=frozenset(guardrail.ignored_providers or ()),
        filters=build_filters(guardrail.content_filter_builtins, guardrail.content_filters),
        enable_free_model_publication=guardrail.enable_free_model_publication,
        enable_free_model_training=guardrail.enable_free_model_training,
        enable_paid_model_training=guardrail.enable_paid_model_training,
        zdr={
            **{letter: getattr(guardrail, f"enforce_zdr_vendor_{letter}") for letter in ZDR_LETTERS},
            "other": guardrail.enforce_zdr_other,
        },
        include_byok_in_budgets=guardrail.include_byok_in_budgets,
        limit_usd=guardrail.limit_usd,
        reset_interval=guardrail.reset_interval,
    )


def rules_for_key(*, key_id: uuid.UUID, workspace_id: uuid.UUID, user_id: uuid.UUID | None) -> list[GuardrailRule]:
    """The guardrails that apply to a key's traffic: workspace default, its creator's, its own (in that order)."""
    found: list[tuple[Guardrail, str]] = []
    default = Guardrail.objects.select_related("workspace").filter(workspace_id=workspace_id, is_default=True).first()
    if default is not None:
        found.append((default, "workspace"))
    if user_id is not None:
        member = (
            GuardrailMemberAssignment.objects.select_related("guardrail__workspace").filter(user_id=user_id).first()
        )
        if member is not None:
            found.append((member.guardrail, "member"))
    key = GuardrailKeyAssignment.objects.select_related("guardrail__workspace").filter(api_key_id=key_id).first()
    if key is not None:
        found.append((key.guardrail, "api-key"))
    if not found:
        return []
    aliases = _model_aliases() if any(g.allowed_models or g.ignored_models for g, _ in found) else {}
    return [rule_from_guardrail(guardrail, scope, aliases) for guardrail, scope in found]
