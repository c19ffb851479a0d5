"""What the policies above accounts say about one key, for `GET /key` and `GET /credits`: its budget layers
(budgets, with the guardrails' own budgets first) and the data regions its requests may arrive through
(guardrails). Registries, filled by those apps' AppConfig.ready() (docs/architecture.md), so that accounts
imports neither and neither imports the other.

Defaults, right when the app is not installed: no budget applies; requests arrive through the global region.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any


def _no_budgets(api_key: Any, now: datetime | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    return [], None


def _global_region(api_key: Any) -> list[str]:
    return ["global"]


# (budgets, effective_budget) of a key: every budget layer, and the one that blocks first.
key_budgets: Callable[..., tuple[list[dict[str, Any]], dict[str, Any] | None]] = _no_budgets
# The data regions a key's requests may arrive through.
allowed_data_regions: Callable[[Any], list[str]] = _global_region


# Sources of the budget layers of other policies, checked before the workspace budgets (guardrail budgets), each
# `(api_key) -> [(scope, budget_id, guardrail_id, SpendLimit)]`; budgets.key_budgets lists them first.
outer_budget_layers: list[Callable[[Any], list[tuple]]] = []


def register_budget_layers(reader: Callable[[Any], list[tuple]]) -> None:
    """Called once by GuardrailsConfig.ready() with guardrails.key_facts.budget_layers."""
    outer_budget_layers.append(reader)


def register_key_budgets(reader: Callable[..., tuple[list[dict[str, Any]], dict[str, Any] | None]]) -> None:
    """Called once by BudgetsConfig.ready() with budgets.key_budgets.key_budgets."""
    global key_budgets
    key_budgets = reader


def register_allowed_data_regions(reader: Callable[[Any], list[str]]) -> None:
    """Called once by GuardrailsConfig.ready() with guardrails.key_facts.allowed_data_regions."""
    global allowed_data_regions
    allowed_data_regions = reader
