"""The budgets that apply to one API key, as `GET /key` shows them (`budgets`, `effective_budget`).

Every layer the data plane checks for a request of the key, in the order of the public router API: guardrail
budgets (the workspace default guardrail, the creator's member guardrail, the key's own guardrail), the
workspace budgets, then the key's own `limit`. The spend of each is what enforcement counts in the current
window: the counter row of that window when it exists, else the recorded generations of the window (the
counter is created from them on the first request). In-flight holds are not spend.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from accounts import key_limits
from accounts.models import ApiKey
from accounts.principal import Principal
from budgets.counters import recorded_spend_units
from budgets.selectors import key_spend_limit, workspace_spend_limits
from gateway_project.api.serializers import format_timestamp
from gateway_project.periods import period_end
from inference.pipeline.context import SpendLimit
from metering.cost import units_to_usd


def _layers(api_key: ApiKey) -> list[tuple[str, str | None, str | None, SpendLimit]]:
    """(scope, budget_id, guardrail_id, limit) of every budget layer of the key, in enforcement order."""
    layers = [layer for reader in key_limits.outer_budget_layers for layer in reader(api_key)]
    budget_ids = _workspace_budget_ids(api_key)
    for limit in workspace_spend_limits(api_key.workspace_id):
        layers.append(("workspace", budget_ids.get(limit.interval), None, limit))
    own = key_spend_limit(Principal.from_key(api_key))
    if own is not None:
        layers.append(("key_limit", None, None, own))
    return layers


def _workspace_budget_ids(api_key: ApiKey) -> dict[str, str]:
    from budgets.models import WorkspaceBudget

    rows = WorkspaceBudget.objects.filter(workspace_id=api_key.workspace_id).values_list("reset_interval", "id")
    return {interval: str(budget_id) for interval, budget_id in rows}


def _usd(units: int) -> float:
    return float(units_to_usd(units))


def key_budgets(api_key: ApiKey, now: datetime | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(budgets, effective_budget) of the key: every layer, and the one that blocks first (least remaining)."""
    now = now or timezone.now()
    budgets = []
    for scope, budget_id, guardrail_id, limit in _layers(api_key):
        spent = _usd(recorded_spend_units(limit, now))
        interval = None if limit.interval == "lifetime" else limit.interval
        budgets.append(
            {
                "scope": scope,
                "budget_id": budget_id,
                "guardrail_id": guardrail_id,
                "include_byok": limit.include_byok,
                "limit_usd": float(limit.limit_usd),
                "spend_usd": spent,
                "remaining_usd": float(limit.limit_usd) - spent,
                "reset_interval": interval,
                "resets_at": format_timestamp(period_end(limit.interval, now)),
            }
        )
    effective = min(budgets, key=lambda b: b["remaining_usd"], default=None)
    return budgets, effective
