"""What keys spent, for the key records accounts shows (key lists, `GET /key`).

Spend is recorded as inference's Generation rows, and inference sits above accounts (docs/architecture.md):
accounts does not import it. Inference registers where spend is read from (`register_usage_source`, in
InferenceConfig.ready()); without it every key has spent nothing.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Protocol

USAGE_FIELDS = (
    "usage",
    "usage_daily",
    "usage_weekly",
    "usage_monthly",
    "byok_usage",
    "byok_usage_daily",
    "byok_usage_weekly",
    "byok_usage_monthly",
)


class UsageSource(Protocol):
    def usage_by_key(self, key_hashes: list[str], now: datetime) -> dict[str, dict[str, Decimal]]:
        """Key hash -> USAGE_FIELDS (USD; all time and the current UTC day, week and month, platform and BYOK
        apart), for the keys that spent anything."""

    def free_model_requests(self, organization_id: uuid.UUID, since: datetime) -> int:
        """The organization's requests to free models since `since`."""


class NoUsage:
    """No usage source registered: nothing was spent."""

    def usage_by_key(self, key_hashes: list[str], now: datetime) -> dict[str, dict[str, Decimal]]:
        return {}

    def free_model_requests(self, organization_id: uuid.UUID, since: datetime) -> int:
        return 0


usage_source: UsageSource = NoUsage()


def register_usage_source(source: UsageSource) -> None:
    """Where key spend is read from (inference's AppConfig.ready(); the last one wins)."""
    global usage_source
    usage_source = source
