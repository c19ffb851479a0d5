"""Reads of the budgets app: budget records and the spending limits that apply to a request."""

from __future__ import annotations

import uuid
from decimal import Decimal

from accounts.models import Workspace
from budgets.models import INTERVAL_ORDER, WorkspaceBudget
from inference.pipeline.context import SpendLimit

_RANK = {interval: rank for rank, interval in enumerate(INTERVAL_ORDER)}


def budget_list(*, workspace: Workspace) -> list[WorkspaceBudget]:
    """The workspace's budgets, narrowest interval first."""
    return sorted(WorkspaceBudget.objects.filter(workspace=workspace), key=lambda b: _RANK[b.reset_interval])


def budget_get(*, workspace: Workspace, interval: str) -> WorkspaceBudget | None:
    return WorkspaceBudget.objects.filter(workspace=workspace, reset_interval=interval).first()


def workspace_spend_limits(workspace_id: uuid.UUID) -> list[SpendLimit]:
    """Every budget of a workspace as a SpendLimit (sync; the data plane caches it per policy version)."""
    workspace = Workspace.objects.filter(id=workspace_id).only("id", "slug", "include_byok_in_budgets").first()
    if workspace is None:
        return []
    return [
        SpendLimit(
            scope="workspace",
            scope_id=str(workspace.id),
            name=f"Workspace '{workspace.slug}' {budget.reset_interval} budget",
            limit_usd=budget.limit_usd,
            interval=budget.reset_interval,
            include_byok=workspace.include_byok_in_budgets,
        )
        for budget in budget_list(workspace=workspace)
    ]


def key_spend_limit(principal) -> SpendLimit | None:
    """The key's own `limit` as a SpendLimit (no limit_reset means the limit never resets)."""
    if principal.limit is None:
        return None
    return SpendLimit(
        scope="api-key",
        scope_id=principal.key_hash,
        name=f"API key '{principal.key_name}' limit",
        limit_usd=Decimal(principal.limit),
        interval=principal.limit_reset or "lifetime",
        include_byok=principal.include_byok_in_limit,
    )
