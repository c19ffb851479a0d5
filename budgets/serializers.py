"""Shapes of the budgets API."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from budgets.models import WorkspaceBudget
from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer

MAX_LIMIT_USD = Decimal("100000000")


class WorkspaceBudgetSerializer(GatewayModelSerializer):
    workspace_id = serializers.UUIDField(read_only=True)
    limit_usd = serializers.DecimalField(max_digits=18, decimal_places=6, coerce_to_string=False, read_only=True)

    class Meta:
        model = WorkspaceBudget
        fields = ["id", "workspace_id", "limit_usd", "reset_interval", "created_at", "updated_at"]
        read_only_fields = fields


class LimitUsdField(serializers.DecimalField):
    """A JSON number (not a string, not a boolean) greater than 0, at most 6 decimal places."""

    default_error_messages = {
        **serializers.DecimalField.default_error_messages,
        "not_number": "must be a number",
        "not_positive": "must be greater than 0",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("not_number")
        value = super().to_internal_value(data)
        if value <= 0:
            self.fail("not_positive")
        return value


class StrictBooleanField(serializers.BooleanField):
    """Only JSON true and false."""

    default_error_messages = {"invalid": "must be a boolean"}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class BudgetPutSerializer(StrictSerializer):
    # At most 100 million USD: spend is counted in 1e-10 USD units in 64-bit integers (budgets.models).
    limit_usd = LimitUsdField(max_digits=18, decimal_places=6, coerce_to_string=False, max_value=MAX_LIMIT_USD)
    include_byok_in_budgets = StrictBooleanField(required=False)


class BudgetResponseSerializer(serializers.Serializer):
    """`{data: <Workspace budget>, include_byok_in_budgets}`."""

    data = WorkspaceBudgetSerializer(read_only=True)
    include_byok_in_budgets = serializers.BooleanField(read_only=True)


class BudgetListResponseSerializer(serializers.Serializer):
    """`{data: [<Workspace budget>], include_byok_in_budgets}`."""

    data = WorkspaceBudgetSerializer(many=True, read_only=True)
    include_byok_in_budgets = serializers.BooleanField(read_only=True)
