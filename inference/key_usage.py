"""Key spend read from the Generation rows, for the key records of accounts (accounts.usage.UsageSource;
registered by InferenceConfig.ready(), since accounts does not import inference)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from django.db.models import DecimalField, Q, Sum, Value
from django.db.models.functions import Coalesce

from gateway_project.periods import period_start
from inference.models import Generation


def _usage_aggregates(now: datetime) -> dict:
    zero = Value(Decimal(0), output_field=DecimalField(max_digits=18, decimal_places=10))
    windows = {"": None, "_daily": "daily", "_weekly": "weekly", "_monthly": "monthly"}
    aggregates = {}
    for suffix, interval in windows.items():
        time_q = Q(created_at__gte=period_start(interval, now)) if interval else Q()
        aggregates[f"usage{suffix}"] = Coalesce(Sum("cost", filter=time_q & Q(is_byok=False)), zero)
        aggregates[f"byok_usage{suffix}"] = Coalesce(Sum("cost", filter=time_q & Q(is_byok=True)), zero)
    return aggregates


def usage_by_key(key_hashes: list[str], now: datetime) -> dict[str, dict[str, Decimal]]:
    """Spend (USD) of each key that spent anything: all time and in the current day/week/month, platform and
    BYOK apart."""
    rows = Generation.objects.filter(key_hash__in=key_hashes).values("key_hash").annotate(**_usage_aggregates(now))
    return {row.pop("key_hash"): row for row in rows}


def free_model_requests(organization_id: uuid.UUID, since: datetime) -> int:
    """The organization's generations on free endpoints since `since`."""
    return Generation.objects.filter(
        organization_id=organization_id, created_at__gte=since, endpoint__is_free=True
    ).count()
