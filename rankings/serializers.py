"""Query parameters and response shape of GET /datasets/rankings-daily."""

from __future__ import annotations

from datetime import date, timedelta

from rest_framework import serializers

from gateway_project.api.errors import validation_error
from gateway_project.day_range import last_completed_day
from rankings.filtered import CONTEXT_BUCKET_NAMES
from rankings.selectors import MODALITY_COLUMNS, RankingQuery

DATASET_START = date(2025, 1, 1)
DEFAULT_SPAN_DAYS = 30
CATEGORIES = (
    "programming",
    "roleplay",
    "marketing",
    "marketing/seo",
    "technology",
    "science",
    "translation",
    "legal",
    "finance",
    "health",
    "trivia",
    "academia",
)
CONTEXT_BUCKETS = CONTEXT_BUCKET_NAMES


class RankingsQuerySerializer(serializers.Serializer):
    start_date = serializers.DateField(required=False, input_formats=["%Y-%m-%d"])
    end_date = serializers.DateField(required=False, input_formats=["%Y-%m-%d"])
    period = serializers.ChoiceField(choices=["day", "week", "month"], required=False)
    modality = serializers.ChoiceField(choices=list(MODALITY_COLUMNS), required=False)
    context_bucket = serializers.ChoiceField(choices=list(CONTEXT_BUCKETS), required=False)
    category = serializers.ChoiceField(choices=list(CATEGORIES), required=False)
    language_type = serializers.ChoiceField(choices=["natural", "programming"], required=False)

    def to_query(self) -> RankingQuery:
        """Apply the dataset's rules to the validated parameters (400 naming the parameter otherwise)."""
        data = self.validated_data
        sampled = [name for name in ("category", "language_type") if data.get(name)]
        exact = [name for name in ("modality", "context_bucket") if data.get(name)]
        if len(sampled) > 1:
            raise validation_error("category", "category and language_type cannot be combined")
        if sampled and exact:
            raise validation_error(sampled[0], f"{sampled[0]} cannot be combined with {exact[0]}")
        period = data.get("period") or ("week" if sampled else "day")
        if sampled and period == "day":
            raise validation_error("period", f"period=day is not available with {sampled[0]}; use week or month")
        end = data.get("end_date") or last_completed_day()
        if end < DATASET_START:
            raise validation_error("end_date", "the dataset begins at 2025-01-01")
        start = data.get("start_date") or end - timedelta(days=DEFAULT_SPAN_DAYS)
        start = max(start, DATASET_START)
        if start > end:
            raise validation_error("start_date", "start_date must not be after end_date")
        return RankingQuery(
            start_date=start,
            end_date=end,
            period=period,
            modality=data.get("modality"),
            context_bucket=data.get("context_bucket"),
            category=data.get("category"),
            language_type=data.get("language_type"),
        )


class RankingRowSerializer(serializers.Serializer):
    date = serializers.CharField(help_text="YYYY-MM-DD: UTC day, or the period start for week and month")
    model_permaslug = serializers.CharField(help_text="`other` aggregates every model outside the top 50")
    total_tokens = serializers.CharField(help_text="Prompt plus completion tokens, as decimal digits")


class RankingsMetaSerializer(serializers.Serializer):
    as_of = serializers.CharField(allow_null=True, help_text="When the data was last aggregated (ISO 8601)")
    start_date = serializers.CharField()
    end_date = serializers.CharField()
    version = serializers.CharField()


class RankingsResponseSerializer(serializers.Serializer):
    data = RankingRowSerializer(many=True)
    meta = RankingsMetaSerializer()
