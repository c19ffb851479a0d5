"""Shapes of the BYOK endpoints. The raw key is write-only: no serializer here ever reads it back."""

from __future__ import annotations

from rest_framework import serializers

from byok.models import ProviderCredential
from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer

MAX_LIST = 100
KEY_HASH_PATTERN = r"^[a-f0-9]{64}$"


class ProviderCredentialSerializer(GatewayModelSerializer):
    """A BYOK credential as the API shows it: the masked `label`, never the key."""

    workspace_id = serializers.UUIDField(read_only=True, allow_null=True)
    allowed_api_key_hashes = serializers.ListField(child=serializers.CharField(), allow_null=True, read_only=True)
    allowed_models = serializers.ListField(child=serializers.CharField(), allow_null=True, read_only=True)
    allowed_user_ids = serializers.ListField(child=serializers.CharField(), allow_null=True, read_only=True)
    declared_region = serializers.SerializerMethodField(
        help_text="Always null: routing does not choose endpoints by region here (a non-null value is refused)"
    )

    class Meta:
        model = ProviderCredential
        fields = [
            "id",
            "name",
            "provider",
            "label",
            "disabled",
            "is_fallback",
            "sort_order",
            "declared_zdr",
            "declared_region",
            "is_required",
            "is_byok_only",
            "allowed_api_key_hashes",
            "allowed_models",
            "allowed_user_ids",
            "workspace_id",
            "created_at",
        ]
        read_only_fields = fields

    def get_declared_region(self, obj) -> str | None:
        return None


DECLARED_REGION_REFUSED = (
    "only null: this gateway checks a request's data region at ingress and does not choose endpoints or "
    "credentials by region, so a region declaration would change nothing"
)


def _unique(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


class UniqueListField(serializers.ListField):
    """A list whose duplicates are dropped (order kept) after validation, so limits count what was sent."""

    def run_validation(self, data=serializers.empty):
        return _unique(super().run_validation(data))


class _RestrictionFields(StrictSerializer):
    name = serializers.CharField(max_length=255, required=False, allow_null=True, allow_blank=True)
    declared_zdr = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text="true: ZDR-requiring requests may use this key even when the catalog says the provider retains "
        "data; false: they never use it; null: the catalog's policy",
    )
    is_required = serializers.BooleanField(
        required=False, help_text="The platform key is not used for the models this key applies to"
    )
    is_byok_only = serializers.BooleanField(
        required=False, help_text="The platform key of this provider is not used at all (not with is_fallback)"
    )

    def to_internal_value(self, data):
        if isinstance(data, dict) and "declared_region" in data:
            if data["declared_region"] is not None:
                raise serializers.ValidationError({"declared_region": [DECLARED_REGION_REFUSED]})
            data = {k: v for k, v in data.items() if k != "declared_region"}
        return super().to_internal_value(data)

    disabled = serializers.BooleanField(required=False)
    is_fallback = serializers.BooleanField(required=False)
    sort_order = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)
    allowed_api_key_hashes = UniqueListField(
        child=serializers.RegexField(
            KEY_HASH_PATTERN, error_messages={"invalid": "each hash must be 64 lowercase hexadecimal characters"}
        ),
        min_length=1,
        max_length=MAX_LIST,
        required=False,
        allow_null=True,
        help_text="API key hashes allowed to use the credential; null: every key",
    )
    allowed_models = UniqueListField(
        child=serializers.CharField(min_length=1, max_length=200),
        max_length=MAX_LIST,
        required=False,
        allow_null=True,
        help_text="Model slugs the credential may serve; null: every model",
    )
    allowed_user_ids = UniqueListField(
        child=serializers.CharField(min_length=1, max_length=256),
        max_length=MAX_LIST,
        required=False,
        allow_null=True,
        help_text="Users (API key creators) allowed to use the credential; null: every user",
    )


class ProviderCredentialCreateSerializer(_RestrictionFields):
    """POST /byok."""

    provider = serializers.CharField(min_length=1, max_length=100, help_text="Catalog provider slug")
    key = serializers.CharField(min_length=1, write_only=True, help_text="The raw provider key (never returned)")
    workspace_id = serializers.CharField(
        required=False, allow_null=True, min_length=1, help_text="Workspace uuid or slug; null: every workspace"
    )


class ProviderCredentialUpdateSerializer(_RestrictionFields):
    """PATCH /byok/{id}: only the present fields change; `key` rotates the raw key in place."""

    key = serializers.CharField(
        min_length=1, required=False, write_only=True, help_text="New raw provider key (rotates in place)"
    )
