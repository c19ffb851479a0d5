"""Writes of the budgets app: create, update and delete workspace budgets."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from accounts.models import Workspace
from budgets.models import INTERVAL_ORDER, WorkspaceBudget
from gateway_project.api.errors import GatewayError

_RANK = {interval: rank for rank, interval in enumerate(INTERVAL_ORDER)}


def _order_error(interval: str, other: str, other_limit: Decimal) -> GatewayError:
    relation = "less" if _RANK[interval] < _RANK[other] else "greater"
    return GatewayError(
        400,
        f"limit_usd: the {interval} budget must be {relation} than the {other} budget "
        f"(${other_limit.normalize():f}); limits must strictly decrease lifetime > monthly > weekly > daily",
        metadata={"field": "limit_usd", "conflicting_interval": other},
    )


def check_interval_order(*, limits: dict[str, Decimal], interval: str) -> None:
    """400 naming the first interval whose limit does not strictly increase with the interval's width."""
    new = limits[interval]
    for other in INTERVAL_ORDER:
        if other == interval or other not in limits:
            continue
        narrower = _RANK[interval] < _RANK[other]
        if (narrower and not new < limits[other]) or (not narrower and not new > limits[other]):
            raise _order_error(interval, other, limits[other])


@transaction.atomic
def budget_put(
    *, workspace: Workspace, interval: str, limit_usd: Decimal, include_byok_in_budgets: bool | None = None
) -> tuple[WorkspaceBudget, bool]:
    """Create or update the workspace's budget of `interval`; returns (budget, include_byok_in_budgets)."""
    # Lock the workspace row so two concurrent PUTs cannot both pass the order check.
    workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
    existing = {b.reset_interval: b for b in WorkspaceBudget.objects.filter(workspace=workspace)}
    limits = {name: budget.limit_usd for name, budget in existing.items()}
    limits[interval] = limit_usd
    check_interval_order(limits=limits, interval=interval)
    budget = existing.get(interval)
    if budget is None:
        budget = WorkspaceBudget.objects.create(workspace=workspace, reset_interval=interval, limit_usd=limit_usd)
    elif budget.limit_usd != limit_usd:
        budget.limit_usd = limit_usd
        budget.save(update_fields=["limit_usd", "updated_at"])
    if include_byok_in_budgets is not None and include_byok_in_budgets != workspace.include_byok_in_budgets:
        workspace.include_byok_in_budgets = include_byok_in_budgets
        workspace.save(update_fields=["include_byok_in_budgets", "updated_at"])
    return budget, workspace.include_byok_in_budgets


def budget_delete(*, workspace: Workspace, interval: str) -> None:
    """Remove the workspace's budget of `interval` (nothing to do when there is none)."""
    for budget in WorkspaceBudget.objects.filter(workspace=workspace, reset_interval=interval):
        budget.delete()
