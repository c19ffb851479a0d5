"""Shapes of the accounts endpoints: keys, workspaces, members."""

from __future__ import annotations

from rest_framework import serializers

from accounts.models import ApiKey, LimitReset, User, Workspace, WorkspaceMember, WorkspaceRole
from accounts.selectors import USAGE_FIELDS, limit_remaining
from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer, TimestampField

MAX_PER_MINUTE = 2_147_483_647  # the database column's largest value


def per_minute_field(what: str) -> serializers.IntegerField:
    """`requests_per_minute` / `tokens_per_minute` on writes: an integer >= 1, or null for unlimited."""
    return serializers.IntegerField(
        min_value=1,
        max_value=MAX_PER_MINUTE,
        required=False,
        allow_null=True,
        help_text=f"{what} admitted per minute (sliding window); null: unlimited.",
    )


class _RateLimitWriteFields(StrictSerializer):
    requests_per_minute = per_minute_field("Requests")
    tokens_per_minute = per_minute_field("Tokens (worst-case estimate held, then actual usage)")


class ApiKeySerializer(GatewayModelSerializer):
    """A key as the API shows it: never the raw key, only its hash and masked label."""

    workspace_id = serializers.UUIDField(read_only=True)
    creator_user_id = serializers.UUIDField(source="creator_id", read_only=True, allow_null=True)
    is_management_key = serializers.BooleanField(source="is_management", read_only=True)
    limit = serializers.FloatField(read_only=True, allow_null=True)
    limit_remaining = serializers.SerializerMethodField()
    usage = serializers.SerializerMethodField()
    usage_daily = serializers.SerializerMethodField()
    usage_weekly = serializers.SerializerMethodField()
    usage_monthly = serializers.SerializerMethodField()
    byok_usage = serializers.SerializerMethodField()
    byok_usage_daily = serializers.SerializerMethodField()
    byok_usage_weekly = serializers.SerializerMethodField()
    byok_usage_monthly = serializers.SerializerMethodField()
    external_user = serializers.SerializerMethodField(
        help_text="Always null: keys carry no partner end-user identity here (POST /keys refuses `external`)"
    )

    class Meta:
        model = ApiKey
        fields = [
            "hash",
            "name",
            "label",
            "disabled",
            "is_management_key",
            "workspace_id",
            "creator_user_id",
            "limit",
            "limit_remaining",
            "limit_reset",
            "include_byok_in_limit",
            "requests_per_minute",
            "tokens_per_minute",
            *USAGE_FIELDS,
            "external_user",
            "expires_at",
            "last_used_at",
            "created_at",
            "updated_at",
        ]

    def get_external_user(self, obj: ApiKey) -> str | None:
        return None

    def _usage(self, obj: ApiKey) -> dict:
        return self.context["usage"][obj.hash]

    def get_limit_remaining(self, obj: ApiKey) -> float | None:
        remaining = limit_remaining(obj, self._usage(obj))
        return None if remaining is None else float(remaining)

    def get_usage(self, obj) -> float:
        return float(self._usage(obj)["usage"])

    def get_usage_daily(self, obj) -> float:
        return float(self._usage(obj)["usage_daily"])

    def get_usage_weekly(self, obj) -> float:
        return float(self._usage(obj)["usage_weekly"])

    def get_usage_monthly(self, obj) -> float:
        return float(self._usage(obj)["usage_monthly"])

    def get_byok_usage(self, obj) -> float:
        return float(self._usage(obj)["byok_usage"])

    def get_byok_usage_daily(self, obj) -> float:
        return float(self._usage(obj)["byok_usage_daily"])

    def get_byok_usage_weekly(self, obj) -> float:
        return float(self._usage(obj)["byok_usage_weekly"])

    def get_byok_usage_monthly(self, obj) -> float:
        return float(self._usage(obj)["byok_usage_monthly"])


class _KeyLimitFields(_RateLimitWriteFields):
    name = serializers.CharField(min_length=1, max_length=200)
    disabled = serializers.BooleanField(required=False)
    limit = serializers.DecimalField(max_digits=18, decimal_places=6, min_value=0, required=False, allow_null=True)
    limit_reset = serializers.ChoiceField(choices=LimitReset.choices, required=False, allow_null=True)
    include_byok_in_limit = serializers.BooleanField(required=False)
    expires_at = TimestampField(required=False, allow_null=True)


class ApiKeyCreateSerializer(_KeyLimitFields):
    """POST /keys."""

    workspace_id = serializers.CharField(required=False, min_length=1, help_text="Workspace uuid or slug")
    is_management = serializers.BooleanField(required=False, default=False)
    creator_user_id = serializers.UUIDField(required=False, allow_null=True)

    refused = {"external": "not supported: keys carry no partner identity (external_user is always null)"}


class ApiKeyUpdateSerializer(_KeyLimitFields):
    """PATCH /keys/{hash}: only the fields present change."""

    refused = {"workspace_id": "a key cannot be moved to another workspace: create a key in that workspace"}


class KeyListQuerySerializer(serializers.Serializer):
    """Query of GET /keys (besides offset, limit, workspace_id): each filter applies only when sent."""

    include_disabled = serializers.BooleanField(
        required=False, default=None, allow_null=True, help_text="false: leave disabled keys out (default: listed)"
    )
    include_expired = serializers.BooleanField(
        required=False, default=None, allow_null=True, help_text="false: leave expired keys out (default: listed)"
    )


class ApiKeyCreatedSerializer(serializers.Serializer):
    """201 of POST /keys: the record and, once, the raw key."""

    data = ApiKeySerializer(read_only=True)
    key = serializers.CharField(read_only=True)


# Members of the public router API's workspace we answer with a constant (docs/sdk.md says why) and refuse
# on writes unless the body sends that same constant.
WORKSPACE_CONSTANTS = {
    "default_text_model": None,
    "default_image_model": None,
    "default_provider_sort": None,
    "io_logging_api_key_ids": None,
    "is_data_discount_logging_enabled": False,
    "disabled_server_tools": None,
}
WORKSPACE_CONSTANT_REASONS = {
    "default_text_model": "not supported: a request without a model is a 400, there is no workspace default",
    "default_image_model": "not supported: a request without a model is a 400, there is no workspace default",
    "default_provider_sort": "not supported: routing sorts by price unless the request's provider.sort says",
    "io_logging_api_key_ids": "only null (every key): keys are named by their hash here, not by an integer id",
    "is_data_discount_logging_enabled": "only false: there is no data-discount program here",
    "disabled_server_tools": "not supported: server tools are allowed or refused per request, not per workspace",
}


class WorkspaceSerializer(GatewayModelSerializer):
    default_guardrail_id = serializers.UUIDField(read_only=True)
    created_by = serializers.UUIDField(source="created_by_id", read_only=True, allow_null=True)
    default_text_model = serializers.SerializerMethodField()
    default_image_model = serializers.SerializerMethodField()
    default_provider_sort = serializers.SerializerMethodField()
    io_logging_api_key_ids = serializers.SerializerMethodField()
    is_data_discount_logging_enabled = serializers.SerializerMethodField()

    class Meta:
        model = Workspace
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "default_guardrail_id",
            "requests_per_minute",
            "tokens_per_minute",
            "include_byok_in_budgets",
            "is_observability_broadcast_enabled",
            "is_observability_io_logging_enabled",
            "io_logging_sampling_rate",
            "io_logging_api_key_ids",
            "response_cache_enabled",
            "is_data_discount_logging_enabled",
            "default_text_model",
            "default_image_model",
            "default_provider_sort",
            "created_by",
            "created_at",
            "updated_at",
        ]

    def get_default_text_model(self, obj) -> str | None:
        return WORKSPACE_CONSTANTS["default_text_model"]

    def get_default_image_model(self, obj) -> str | None:
        return WORKSPACE_CONSTANTS["default_image_model"]

    def get_default_provider_sort(self, obj) -> str | None:
        return WORKSPACE_CONSTANTS["default_provider_sort"]

    def get_io_logging_api_key_ids(self, obj) -> list[int] | None:
        return WORKSPACE_CONSTANTS["io_logging_api_key_ids"]

    def get_is_data_discount_logging_enabled(self, obj) -> bool:
        return WORKSPACE_CONSTANTS["is_data_discount_logging_enabled"]


class WorkspaceWriteSerializer(_RateLimitWriteFields):
    """POST /workspaces (name required) and PATCH /workspaces/{id} (all optional).

    The public API's members we answer with a constant are accepted only with that constant's value.
    """

    name = serializers.CharField(min_length=1, max_length=200)
    slug = serializers.SlugField(min_length=1, max_length=100, required=False)
    description = serializers.CharField(max_length=1000, required=False, allow_null=True, allow_blank=True)
    is_observability_broadcast_enabled = serializers.BooleanField(required=False)
    is_observability_io_logging_enabled = serializers.BooleanField(required=False)
    io_logging_sampling_rate = serializers.FloatField(min_value=0.0001, max_value=1, required=False)
    response_cache_enabled = serializers.BooleanField(
        required=False, help_text="Cache answers by default (docs/cache.md); a request opts out with X-Service-Cache"
    )

    def to_internal_value(self, data):
        if isinstance(data, dict):
            for name, reason in WORKSPACE_CONSTANT_REASONS.items():
                if name in data and (name not in WORKSPACE_CONSTANTS or data[name] != WORKSPACE_CONSTANTS[name]):
                    raise serializers.ValidationError({name: [reason]})
            data = {k: v for k, v in data.items() if k not in WORKSPACE_CONSTANTS}
        return super().to_internal_value(data)


class WorkspaceMemberSerializer(GatewayModelSerializer):
    id = serializers.CharField(read_only=True, help_text="The membership's id")
    user_id = serializers.UUIDField(read_only=True)
    workspace_id = serializers.UUIDField(read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = WorkspaceMember
        fields = ["id", "user_id", "workspace_id", "username", "email", "role", "created_at", "updated_at"]


class WorkspaceMembersChangeSerializer(StrictSerializer):
    """POST /workspaces/{id}/members/add|remove."""

    user_ids = serializers.ListField(child=serializers.CharField(), min_length=1, max_length=100)
    role = serializers.ChoiceField(choices=WorkspaceRole.choices, required=False, default=WorkspaceRole.MEMBER)


class MembersAddedSerializer(serializers.Serializer):
    """200 of POST /workspaces/{id}/members/add: our count and the public API's (`added_count` + `data`)."""

    assigned_count = serializers.IntegerField(read_only=True)
    added_count = serializers.IntegerField(read_only=True, help_text="Equals assigned_count")
    data = WorkspaceMemberSerializer(many=True, read_only=True)


class MembersRemovedSerializer(serializers.Serializer):
    """200 of POST /workspaces/{id}/members/remove: our count and the public API's."""

    unassigned_count = serializers.IntegerField(read_only=True)
    removed_count = serializers.IntegerField(read_only=True, help_text="Equals unassigned_count")


class OrganizationMemberSerializer(GatewayModelSerializer):
    """A user of the organization as GET /organization/members lists it."""

    id = serializers.CharField(read_only=True)
    # A plain string: a user created without an address (bootstrap, SCIM without emails) has "" here.
    email = serializers.CharField(read_only=True)
    first_name = serializers.SerializerMethodField()
    last_name = serializers.SerializerMethodField()
    role = serializers.CharField(source="org_role", read_only=True)

    class Meta:
        model = User
        fields = ["id", "email", "first_name", "last_name", "role"]

    def get_first_name(self, obj: User) -> str | None:
        return obj.first_name or None

    def get_last_name(self, obj: User) -> str | None:
        return obj.last_name or None


class UserSerializer(GatewayModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "email", "org_role", "is_active"]
