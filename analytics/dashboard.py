"""What the admin's usage dashboard shows, read from the rollups (and the budget counters), drawn as SVG."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db.models import Sum
from django.utils import timezone

from accounts.models import ApiKey, Workspace
from accounts.principal import Principal
from analytics import svg
from analytics.models import Dimension, UsageDailyRollup
from analytics.selectors import UsageQuery, group_labels, usage_series
from budgets.counters import recorded_spend_units
from budgets.selectors import key_spend_limit, workspace_spend_limits
from metering.cost import units_to_usd

TOP_MODELS = 8
TOP_ROWS = 10
WINDOWS = (7, 30, 90)


def _days(end: datetime, days: int) -> list[datetime]:
    return [end - timedelta(days=days - i) for i in range(days)]


def _totals(organization_id, dimension: str, start: datetime, end: datetime) -> list[tuple[str, float]]:
    """(value, cost) of one dimension over the window (whole UTC days: the daily tier), most expensive first."""
    rows = (
        UsageDailyRollup.objects.filter(organization_id=organization_id, dimension=dimension)
        .filter(bucket__gte=start, bucket__lt=end)
        .values("value")
        .annotate(cost=Sum("cost"), requests=Sum("requests"))
        .order_by("-cost", "-requests")[:TOP_ROWS]
    )
    return [(row["value"], float(row["cost"] or 0)) for row in rows]


def _spend_by_model(query: UsageQuery, days: list[datetime]) -> tuple[dict[str, list[float]], list[tuple[str, str]]]:
    entries = usage_series(UsageQuery(**{**query.__dict__, "group_by": Dimension.MODEL}))
    per_model: dict[str, dict[datetime, float]] = defaultdict(dict)
    for entry in entries:
        per_model[entry["group"] or "(none)"][entry["bucket"]] = float(entry["cost"])
    ranked = sorted(per_model, key=lambda m: -sum(per_model[m].values()))
    series = {model: [per_model[model].get(day, 0.0) for day in days] for model in ranked[:TOP_MODELS]}
    if len(ranked) > TOP_MODELS:
        series["other"] = [sum(per_model[m].get(day, 0.0) for m in ranked[TOP_MODELS:]) for day in days]
    legend = [
        (name, svg.OTHER_COLOR if name == "other" else svg.PALETTE[i % len(svg.PALETTE)])
        for i, name in enumerate(series)
    ]
    return series, legend


def _budgets(organization_id, now: datetime) -> list[tuple[str, float, float]]:
    rows = []
    for workspace in Workspace.objects.filter(organization_id=organization_id).order_by("slug"):
        for limit in workspace_spend_limits(workspace.id):
            rows.append((f"{workspace.slug} · {limit.interval}", limit))
    for key in ApiKey.objects.filter(organization_id=organization_id, limit__isnull=False).order_by("name"):
        limit = key_spend_limit(Principal.from_key(key))
        if limit is not None:
            rows.append((f"key {key.name} · {limit.interval}", limit))
    return [
        (label, float(units_to_usd(recorded_spend_units(limit, now))), float(limit.limit_usd)) for label, limit in rows
    ]


def dashboard_context(organization, days: int) -> dict:
    """Template context of the dashboard: the charts of the last `days` UTC days (today included)."""
    now = timezone.now().astimezone(UTC)
    end = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    start = end - timedelta(days=days)
    day_starts = _days(end, days)
    labels = [day.strftime("%m-%d") for day in day_starts]
    query = UsageQuery(organization_id=organization.id, start=start, end=end, granularity="day", group_by=None)
    totals = {entry["bucket"]: entry for entry in usage_series(query)}
    daily = [totals.get(day) for day in day_starts]
    spend, legend = _spend_by_model(query, day_starts)
    keys = _totals(organization.id, Dimension.KEY, start, end)
    workspaces = _totals(organization.id, Dimension.WORKSPACE, start, end)
    key_names = group_labels(organization.id, Dimension.KEY, {value for value, _ in keys})
    workspace_names = group_labels(organization.id, Dimension.WORKSPACE, {value for value, _ in workspaces})
    requests = sum(entry["requests"] for entry in daily if entry)
    errors = sum(entry["errors"] for entry in daily if entry)
    budgets = _budgets(organization.id, now)
    return {
        "days": days,
        "windows": WINDOWS,
        "start": start,
        "end": end,
        "summary": {
            "requests": requests,
            "errors": errors,
            "error_rate": f"{(errors / requests if requests else 0.0) * 100:.2f} %",
            "cost": sum(float(entry["cost"]) for entry in daily if entry),
        },
        "spend_chart": svg.stacked_bars(labels, spend, "$", "Spend per day, stacked by model"),
        "spend_legend": legend,
        "requests_chart": svg.bars_and_line(
            labels,
            [entry["requests"] if entry else 0 for entry in daily],
            [entry["error_rate"] if entry else 0.0 for entry in daily],
            "Requests per day and error rate",
        ),
        "latency_chart": svg.lines(
            labels,
            {
                "p95": [entry["latency_p95_ms"] if entry else None for entry in daily],
                "p50": [entry["latency_p50_ms"] if entry else None for entry in daily],
            },
            "ms",
            "Latency per day (p50, p95)",
        ),
        "keys_chart": svg.horizontal_bars(
            [(key_names.get(value, value[:12] or "(none)"), cost, None) for value, cost in keys], "$", "Top keys"
        ),
        "workspaces_chart": svg.horizontal_bars(
            [(workspace_names.get(value, value or "(none)"), cost, None) for value, cost in workspaces],
            "$",
            "Top workspaces",
        ),
        "budgets_chart": svg.horizontal_bars(budgets, "$", "Budgets: spend against limit"),
        "has_budgets": bool(budgets),
    }
