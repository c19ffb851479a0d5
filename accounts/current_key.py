"""`GET /key`: the calling key with what the public router API's SDK reads of it.

Beyond the key record: the organization, the data regions its guardrails allow, every budget layer that
applies to it (budgets.key_budgets; both through the registries of accounts.key_limits), its per-minute request
limit, and the free-model request count of its organization today. `is_free_tier` is always false (every key
spends its organization's budgets) and `is_provisioning_key` is the public API's old name of `is_management_key`.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from accounts import key_limits, usage
from accounts.models import ApiKey
from accounts.serializers import ApiKeySerializer
from gateway_project.periods import period_start

UNLIMITED = -1
RATE_LIMIT_NOTE = (
    "at most this many requests per minute for this key: the lower of its requests_per_minute and its "
    "workspace's (shared by the workspace's keys); -1 when neither is set"
)
FREE_MODEL_NOTE = "no daily cap on free-model requests here: limit and remaining are -1; used counts today's (UTC)"


def rate_limit(api_key: ApiKey) -> dict:
    limits = [v for v in (api_key.requests_per_minute, api_key.workspace.requests_per_minute) if v is not None]
    return {"interval": "1m", "requests": min(limits) if limits else UNLIMITED, "note": RATE_LIMIT_NOTE}


def free_model_daily_requests(api_key: ApiKey) -> dict:
    since = period_start("daily", timezone.now())
    used = usage.usage_source.free_model_requests(api_key.organization_id, since)
    return {"limit": UNLIMITED, "remaining": UNLIMITED, "used": used}


class CurrentKeySerializer(ApiKeySerializer):
    """The record of `GET /key`."""

    organization_id = serializers.UUIDField(read_only=True)
    is_provisioning_key = serializers.BooleanField(source="is_management", read_only=True)
    is_free_tier = serializers.SerializerMethodField()
    allowed_data_regions = serializers.SerializerMethodField()
    budgets = serializers.SerializerMethodField()
    effective_budget = serializers.SerializerMethodField()
    rate_limit = serializers.SerializerMethodField(help_text=RATE_LIMIT_NOTE)
    free_model_daily_requests = serializers.SerializerMethodField(help_text=FREE_MODEL_NOTE)

    class Meta(ApiKeySerializer.Meta):
        fields = [
            *ApiKeySerializer.Meta.fields,
            "organization_id",
            "is_provisioning_key",
            "is_free_tier",
            "allowed_data_regions",
            "budgets",
            "effective_budget",
            "rate_limit",
            "free_model_daily_requests",
        ]

    def _budgets(self, obj: ApiKey):
        if "budgets" not in self.context:
            self.context["budgets"] = key_limits.key_budgets(obj)
        return self.context["budgets"]

    def get_is_free_tier(self, obj) -> bool:
        return False

    def get_allowed_data_regions(self, obj: ApiKey) -> list[str]:
        return key_limits.allowed_data_regions(obj)

    def get_budgets(self, obj: ApiKey) -> list[dict]:
        return self._budgets(obj)[0]

    def get_effective_budget(self, obj: ApiKey) -> dict | None:
        return self._budgets(obj)[1]

    def get_rate_limit(self, obj: ApiKey) -> dict:
        return rate_limit(obj)

    def get_free_model_daily_requests(self, obj: ApiKey) -> dict:
        return free_model_daily_requests(obj)
