"""Shapes of the guardrail endpoints: the Guardrail record, its create/update bodies, and assignments."""

from __future__ import annotations

from rest_framework import serializers

from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer
from gateway_project.regex import InvalidPattern, compile_pattern
from guardrails.models import ZDR_FIELDS, Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment, ResetInterval
from guardrails.policy import zdr_vendor_letters
from guardrails.validation import ACTIONS, REGIONS
from textscan.detectors import BUILTIN_SLUGS, LABELS

SCAN_SCOPES = ("user_only", "all_messages")
# The public router API's per-vendor ZDR fields and the model vendor each one names.
PUBLIC_ZDR_NAMES = {
    "enforce_zdr_openai": "openai",
    "enforce_zdr_anthropic": "anthropic",
    "enforce_zdr_google": "google",
    "enforce_zdr_xai": "x-ai",
}
SAFETY_RETENTION_REFUSED = (
    "not supported: the catalog records no safety-retention policy per provider, so ZDR enforcement cannot exempt it"
)


def _require(attrs: dict, *names: str) -> None:
    """Required members of a filter even inside a PATCH (DRF skips `required` in nested partial updates)."""
    missing = [name for name in names if name not in attrs]
    if missing:
        raise serializers.ValidationError({name: "This field is required." for name in missing})


class BuiltinFilterSerializer(StrictSerializer):
    """A built-in content filter; `label` is set by the server from the slug."""

    slug = serializers.ChoiceField(choices=BUILTIN_SLUGS)
    action = serializers.ChoiceField(choices=ACTIONS)
    label = serializers.CharField(required=False, help_text="Set by the server from the slug; if sent, must equal it")
    scan_scope = serializers.ChoiceField(choices=SCAN_SCOPES, required=False)

    def validate(self, attrs):
        _require(attrs, "slug", "action")
        if "scan_scope" in attrs and attrs["slug"] != "regex-prompt-injection":
            raise serializers.ValidationError({"scan_scope": "applies to the regex-prompt-injection filter only"})
        label = LABELS[attrs["slug"]]
        if attrs.get("label", label) != label:
            raise serializers.ValidationError({"label": f"is set by the server from the slug: {label}"})
        attrs["label"] = label
        return attrs


class CustomFilterSerializer(StrictSerializer):
    """A custom regular-expression filter (RE2 syntax, compiled at write time)."""

    pattern = serializers.CharField(trim_whitespace=False)
    action = serializers.ChoiceField(choices=ACTIONS)
    label = serializers.CharField(max_length=100, required=False, allow_null=True)

    def validate(self, attrs):
        _require(attrs, "pattern", "action")
        return attrs

    def validate_pattern(self, value: str) -> str:
        try:
            compile_pattern(value)
        except InvalidPattern as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


def _list(child, **kwargs) -> serializers.ListField:
    return serializers.ListField(child=child, required=False, allow_null=True, allow_empty=False, **kwargs)


def zdr_aliases() -> tuple[dict[str, str], dict[str, str]]:
    """The public router API's per-vendor ZDR names, as (aliases, refused).

    `enforce_zdr_openai` is an alias of the `enforce_zdr_vendor_*` field whose vendor (GATEWAY_ZDR_VENDOR_A..D)
    is `openai`, and likewise `_anthropic`, `_google`, `_xai` (vendor `x-ai`); a name whose vendor no field
    covers in this deployment is refused, never ignored.
    """
    letters = zdr_vendor_letters()
    aliases, refused = {}, {}
    for alias, vendor in PUBLIC_ZDR_NAMES.items():
        if vendor in letters:
            aliases[alias] = f"enforce_zdr_vendor_{letters[vendor]}"
        else:
            refused[alias] = (
                f"no enforce_zdr_vendor_* field covers vendor '{vendor}' in this deployment (GATEWAY_ZDR_VENDOR_A..D)"
            )
    return aliases, refused


class GuardrailWriteSerializer(StrictSerializer):
    """Body of POST /guardrails and PATCH /guardrails/{id} (all optional on PATCH, no workspace_id).

    The public router API's names `enforce_zdr_openai`, `_anthropic`, `_google`, `_xai` are aliases of the
    `enforce_zdr_vendor_*` fields configured for those vendors (`zdr_aliases`).
    """

    refused = {
        "allow_safety_retention_google": SAFETY_RETENTION_REFUSED,
        "allow_safety_retention_other": SAFETY_RETENTION_REFUSED,
    }

    def get_aliases(self) -> dict[str, str]:
        return zdr_aliases()[0]

    def get_refused(self) -> dict[str, str]:
        return {**self.refused, **zdr_aliases()[1]}

    name = serializers.CharField(min_length=1, max_length=200, trim_whitespace=False)
    description = serializers.CharField(max_length=1000, required=False, allow_null=True, allow_blank=True)
    workspace_id = serializers.UUIDField(required=False)
    allowed_data_regions = _list(serializers.ChoiceField(choices=REGIONS))
    allowed_models = _list(serializers.CharField(max_length=200), max_length=1000)
    allowed_providers = _list(serializers.CharField(max_length=100), max_length=1000)
    ignored_models = _list(serializers.CharField(max_length=200), max_length=1000)
    ignored_providers = _list(serializers.CharField(max_length=100), max_length=1000)
    content_filter_builtins = _list(BuiltinFilterSerializer(), max_length=len(BUILTIN_SLUGS))
    content_filters = _list(CustomFilterSerializer(), max_length=100)
    enable_free_model_publication = serializers.BooleanField(required=False)
    enable_free_model_training = serializers.BooleanField(required=False)
    enable_paid_model_training = serializers.BooleanField(required=False)
    enforce_zdr = serializers.BooleanField(required=False, allow_null=True)
    enforce_zdr_vendor_a = serializers.BooleanField(required=False)
    enforce_zdr_vendor_b = serializers.BooleanField(required=False)
    enforce_zdr_vendor_c = serializers.BooleanField(required=False)
    enforce_zdr_vendor_d = serializers.BooleanField(required=False)
    enforce_zdr_other = serializers.BooleanField(required=False)
    include_byok_in_budgets = serializers.BooleanField(required=False)
    limit_usd = serializers.DecimalField(
        max_digits=18, decimal_places=6, min_value=0, required=False, allow_null=True, coerce_to_string=False
    )
    reset_interval = serializers.ChoiceField(choices=ResetInterval.choices, required=False, allow_null=True)

    def validate_allowed_data_regions(self, value):
        return None if value is None else list(dict.fromkeys(value))

    def validate_content_filter_builtins(self, value):
        if value is not None:
            slugs = [entry["slug"] for entry in value]
            duplicate = next((s for s in slugs if slugs.count(s) > 1), None)
            if duplicate:
                raise serializers.ValidationError(f"built-in filter '{duplicate}' is listed more than once")
        return value

    def validate(self, attrs):
        sent = set(getattr(self, "initial_data", {}) or {})
        if ("limit_usd" in sent) != ("reset_interval" in sent):
            missing = "reset_interval" if "limit_usd" in sent else "limit_usd"
            raise serializers.ValidationError({missing: "limit_usd and reset_interval must be sent together"})
        if attrs.get("reset_interval") is not None and attrs.get("limit_usd") is None:
            raise serializers.ValidationError({"limit_usd": "a reset_interval needs a limit_usd"})
        return attrs


class GuardrailUpdateSerializer(GuardrailWriteSerializer):
    """PATCH body: like create, every field optional, `workspace_id` not accepted."""

    def validate(self, attrs):
        if "workspace_id" in (getattr(self, "initial_data", {}) or {}):
            raise serializers.ValidationError({"workspace_id": "a guardrail cannot be moved to another workspace"})
        return super().validate(attrs)


class GuardrailSerializer(GatewayModelSerializer):
    """A guardrail as the API shows it."""

    name = serializers.SerializerMethodField()
    workspace_id = serializers.UUIDField(read_only=True)
    is_default = serializers.BooleanField(read_only=True)
    content_filter_builtins = BuiltinFilterSerializer(many=True, read_only=True, allow_null=True)
    content_filters = CustomFilterSerializer(many=True, read_only=True, allow_null=True)
    limit_usd = serializers.FloatField(read_only=True, allow_null=True)
    allowed_data_regions = serializers.ListField(child=serializers.CharField(), read_only=True, allow_null=True)
    allowed_models = serializers.ListField(child=serializers.CharField(), read_only=True, allow_null=True)
    allowed_providers = serializers.ListField(child=serializers.CharField(), read_only=True, allow_null=True)
    ignored_models = serializers.ListField(child=serializers.CharField(), read_only=True, allow_null=True)
    ignored_providers = serializers.ListField(child=serializers.CharField(), read_only=True, allow_null=True)

    class Meta:
        model = Guardrail
        fields = [
            "id", "name", "description", "workspace_id", "is_default", "allowed_data_regions", "allowed_models",
            "allowed_providers", "ignored_models", "ignored_providers", "content_filter_builtins",
            "content_filters", "enable_free_model_publication", "enable_free_model_training",
            "enable_paid_model_training", "enforce_zdr", *ZDR_FIELDS, "include_byok_in_budgets", "limit_usd",
            "reset_interval", "created_at", "updated_at",
        ]  # fmt: skip

    def get_name(self, obj: Guardrail) -> str:
        return obj.workspace.name if obj.is_default else obj.name


class KeyAssignmentSerializer(GatewayModelSerializer):
    """A guardrail assigned to an API key."""

    guardrail_id = serializers.UUIDField(read_only=True)
    key_hash = serializers.CharField(source="api_key.hash", read_only=True)
    key_name = serializers.CharField(source="api_key.name", read_only=True)
    key_label = serializers.CharField(source="api_key.label", read_only=True)
    assigned_by = serializers.CharField(source="assigned_by.hash", read_only=True, allow_null=True, default=None)

    class Meta:
        model = GuardrailKeyAssignment
        fields = ["id", "guardrail_id", "key_hash", "key_name", "key_label", "assigned_by", "created_at"]


class MemberAssignmentSerializer(GatewayModelSerializer):
    """A guardrail assigned to an organization member."""

    guardrail_id = serializers.UUIDField(read_only=True)
    user_id = serializers.UUIDField(read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    organization_id = serializers.UUIDField(source="user.organization_id", read_only=True)
    assigned_by = serializers.CharField(source="assigned_by.hash", read_only=True, allow_null=True, default=None)

    class Meta:
        model = GuardrailMemberAssignment
        fields = ["id", "guardrail_id", "user_id", "username", "organization_id", "assigned_by", "created_at"]


class KeyHashesSerializer(StrictSerializer):
    key_hashes = serializers.ListField(child=serializers.CharField(max_length=64), allow_empty=False, max_length=1000)


class MemberUserIdsSerializer(StrictSerializer):
    member_user_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), allow_empty=False, max_length=1000
    )
