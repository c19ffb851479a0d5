"""Query parameters and answers of GET /analytics/usage and GET /activity."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone
from rest_framework import serializers

from analytics.models import Dimension
from gateway_project.api.serializers import TimestampField
from inference.models import GenerationStatus
from inference.serializers import GenerationSerializer

GRANULARITIES = ("hour", "day", "week", "month")
DEFAULT_RANGE = timedelta(days=30)
MAX_RANGE = {"hour": timedelta(days=92), "day": timedelta(days=3660), "week": timedelta(days=3660),
             "month": timedelta(days=3660)}  # fmt: skip


class StrictQuerySerializer(serializers.Serializer):
    """Query parameters: one the endpoint does not declare is a 400 naming it."""

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({unknown[0]: "unknown query parameter"})
        return attrs


def _whole_hour(value: datetime | None, name: str) -> None:
    if value is not None and (value.minute or value.second or value.microsecond):
        raise serializers.ValidationError(
            {name: "must be a whole UTC hour (rollups are hourly), e.g. 2026-11-01T00:00Z"}
        )


class UsageQuerySerializer(StrictQuerySerializer):
    """Query parameters of GET /analytics/usage."""

    start = serializers.DateTimeField(
        required=False, help_text="First hour included (ISO 8601, a whole hour); default: `end` minus 30 days"
    )
    end = serializers.DateTimeField(
        required=False, help_text="First hour excluded (ISO 8601, a whole hour); default: the next whole hour"
    )
    granularity = serializers.ChoiceField(
        choices=GRANULARITIES, default="day", help_text="Time bucket (UTC; weeks start on Monday)"
    )
    group_by = serializers.ChoiceField(
        choices=Dimension.values, required=False, help_text="Split each bucket by this dimension; omitted: one series"
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        now = timezone.now().astimezone(UTC)
        end = attrs.get("end") or now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        start = attrs.get("start") or end - DEFAULT_RANGE
        _whole_hour(start.astimezone(UTC), "start")
        _whole_hour(end.astimezone(UTC), "end")
        if start >= end:
            raise serializers.ValidationError({"end": "must be after start"})
        granularity = attrs.get("granularity", "day")
        if end - start > MAX_RANGE[granularity]:
            raise serializers.ValidationError(
                {"start": f"range longer than {MAX_RANGE[granularity].days} days for granularity '{granularity}'"}
            )
        return {**attrs, "start": start, "end": end, "granularity": granularity, "group_by": attrs.get("group_by")}


class UsageEntrySerializer(serializers.Serializer):
    """Usage of one time bucket (and group)."""

    bucket = TimestampField(help_text="Start of the bucket (UTC)")
    group = serializers.CharField(
        allow_null=True,
        help_text="Value of `group_by` (model or provider slug, key hash, workspace or user id, status); null "
        'without group_by; "" when the generations had none',
    )
    label = serializers.CharField(allow_null=True, help_text="Key name, workspace slug or user email of `group`")
    requests = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="Generations with status `failed`")
    error_rate = serializers.FloatField(help_text="errors / requests")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    reasoning_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=24, decimal_places=10, coerce_to_string=False, help_text="USD")
    latency_p50_ms = serializers.IntegerField(
        allow_null=True, help_text="Median latency, estimated from a bounded histogram (within its bin)"
    )
    latency_p95_ms = serializers.IntegerField(allow_null=True, help_text="95th percentile latency, same estimate")


class UsageResponseSerializer(serializers.Serializer):
    start = TimestampField()
    end = TimestampField()
    granularity = serializers.ChoiceField(choices=GRANULARITIES)
    group_by = serializers.ChoiceField(choices=Dimension.values, allow_null=True)
    data = UsageEntrySerializer(many=True)


class ActivityQuerySerializer(StrictQuerySerializer):
    """Query parameters of GET /activity (all optional, combined with AND)."""

    start = serializers.DateTimeField(required=False, help_text="Generations created at or after (ISO 8601)")
    end = serializers.DateTimeField(required=False, help_text="Generations created before (ISO 8601)")
    date = serializers.DateField(required=False, help_text="One UTC day (YYYY-MM-DD); not with start/end")
    model = serializers.CharField(required=False, max_length=200, help_text="Model that served")
    provider = serializers.CharField(required=False, max_length=100)
    status = serializers.ChoiceField(choices=GenerationStatus.choices, required=False)
    api_key_hash = serializers.CharField(required=False, max_length=64)
    workspace_id = serializers.UUIDField(required=False)
    user_id = serializers.UUIDField(required=False)
    group_by = serializers.ChoiceField(
        choices=["workspace"],
        required=False,
        help_text="Accepted for the public API's SDK: every row already carries its `workspace_id`",
    )
    offset = serializers.IntegerField(required=False, min_value=0)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if attrs.get("date") and (attrs.get("start") or attrs.get("end")):
            raise serializers.ValidationError({"date": "cannot be combined with start or end"})
        if attrs.get("start") and attrs.get("end") and attrs["start"] >= attrs["end"]:
            raise serializers.ValidationError({"end": "must be after start"})
        return attrs


class ActivitySerializer(GenerationSerializer):
    """One Generation row (the fields of GET /generation), plus the fields of the public API's activity items
    (one generation each: `requests` is 1), so its SDK's `analytics.get_user_activity()` reads it."""

    date = serializers.SerializerMethodField(help_text="UTC day of `created_at` (YYYY-MM-DD)")
    model_permaslug = serializers.CharField()
    endpoint_id = serializers.SerializerMethodField(help_text='Catalog endpoint that served ("" when none)')
    provider_name = serializers.CharField(source="provider")
    usage = serializers.FloatField(source="cost", help_text="Cost in USD (as total_cost)")
    byok_usage_inference = serializers.SerializerMethodField(help_text="Cost in USD when served with a BYOK key")
    requests = serializers.SerializerMethodField(help_text="Always 1: one row per generation")
    prompt_tokens = serializers.IntegerField(source="input_tokens")
    completion_tokens = serializers.IntegerField(source="output_tokens")
    reasoning_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()
    user_id = serializers.UUIDField(allow_null=True)

    def get_date(self, row) -> str:
        return row.created_at.astimezone(UTC).date().isoformat()

    def get_endpoint_id(self, row) -> str:
        return str(row.endpoint_id or "")

    def get_byok_usage_inference(self, row) -> float:
        return float(row.cost) if row.is_byok else 0.0

    def get_requests(self, row) -> int:
        return 1
