"""Shapes of the observability endpoints: a destination as shown (secrets masked) and the write bodies."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer
from gateway_project.encryption import mask_secret
from guardrails.validation import REGIONS
from observability.models import Destination
from observability.types import TYPE_CHOICES, TYPE_SPECS


def masked_config(destination: Destination) -> dict:
    """The config with every secret value (and every header value) in masked form."""
    spec = TYPE_SPECS[destination.type]
    config = destination.full_config()
    shown = {k: mask_secret(v) if k in spec.secrets and isinstance(v, str) else v for k, v in config.items()}
    if "headers" in shown:
        shown["headers"] = {k: mask_secret(v) for k, v in shown["headers"].items()}
    return shown


class DestinationSerializer(GatewayModelSerializer):
    """A destination as the API shows it."""

    config = serializers.SerializerMethodField()
    workspace_id = serializers.UUIDField(read_only=True)
    api_key_hashes = serializers.ListField(child=serializers.CharField(), allow_null=True, read_only=True)
    filter_rules = serializers.JSONField(allow_null=True, read_only=True)
    regions = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Destination
        fields = [
            "id",
            "name",
            "type",
            "config",
            "enabled",
            "api_key_hashes",
            "broadcast_generation_cost",
            "broadcast_generation_identity",
            "broadcast_generation_request_context",
            "broadcast_generation_cost_allocation",
            "filter_rules",
            "privacy_mode",
            "sampling_rate",
            "regions",
            "workspace_id",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_config(self, obj: Destination) -> dict:
        return masked_config(obj)


class _DestinationWriteFields(StrictSerializer):
    name = serializers.CharField(max_length=255)
    config = serializers.DictField()
    enabled = serializers.BooleanField()
    api_key_hashes = serializers.ListField(child=serializers.CharField(), allow_null=True)
    broadcast_generation_cost = serializers.BooleanField()
    broadcast_generation_identity = serializers.BooleanField()
    broadcast_generation_request_context = serializers.BooleanField()
    broadcast_generation_cost_allocation = serializers.BooleanField()
    regions = serializers.ListField(
        child=serializers.ChoiceField(choices=REGIONS),
        min_length=1,
        help_text="Data regions whose requests this destination receives (default: every region)",
    )
    filter_rules = serializers.JSONField(allow_null=True)
    privacy_mode = serializers.BooleanField()
    sampling_rate = serializers.FloatField(min_value=0.0001, max_value=1)

    def validate_regions(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class DestinationCreateSerializer(_DestinationWriteFields):
    """Body of POST /observability/destinations: `name`, `type` and `config` are required."""

    type = serializers.ChoiceField(choices=TYPE_CHOICES)
    workspace_id = serializers.CharField(required=False, allow_null=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.required = name in ("name", "type", "config")


class DestinationUpdateSerializer(_DestinationWriteFields):
    """Body of PATCH /observability/destinations/{id}: every member optional; `type` is not part of it."""

    config = serializers.DictField(allow_null=False)
    refused = {"type": "cannot be changed", "workspace_id": "cannot be changed"}

    def validate(self, attrs):
        for frozen in ("type", "workspace_id"):
            if frozen in self.initial_data:
                raise serializers.ValidationError({frozen: ["cannot be changed"]})
        return attrs
