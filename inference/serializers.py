"""Query parameters and documented shapes of GET /generation, and the unknown-parameter check of the reads."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gateway_project.api.errors import validation_error
from gateway_project.api.serializers import TimestampField
from inference.models import GenerationStatus


def reject_unknown(query_params, allowed: tuple[str, ...]) -> None:
    """400 naming the first query parameter the endpoint does not know (nothing is accepted and ignored)."""
    for name in query_params:
        if name not in allowed:
            raise validation_error(name, f"unknown query parameter (accepted: {', '.join(allowed) or 'none'})")


class GenerationQuerySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The `id` an answer carried (`resp_<uuid>`) or its `x-request-id`")


class GenerationErrorSerializer(serializers.Serializer):
    code = serializers.IntegerField(allow_null=True, help_text="The HTTP status the client got")
    message = serializers.CharField()


class GenerationSerializer(serializers.Serializer):
    """One request's accounting record (read-only)."""

    id = serializers.CharField(help_text="The request id (`x-request-id`)")
    created_at = TimestampField()
    completed_at = TimestampField(allow_null=True)
    model = serializers.CharField(help_text="The model that served (empty when nothing did)")
    requested_model = serializers.CharField(help_text="What the request asked for (`model`, `models`, preset)")
    provider = serializers.CharField(help_text="The provider that served")
    upstream_id = serializers.CharField(help_text="The provider's id of the answer")
    ingress_format = serializers.CharField(help_text="responses | chat-completions | messages | embeddings")
    status = serializers.ChoiceField(choices=GenerationStatus.choices)
    finish_reason = serializers.SerializerMethodField()
    streamed = serializers.BooleanField()
    cancelled = serializers.SerializerMethodField(help_text="The client went away before the answer was complete")
    is_byok = serializers.BooleanField()
    cache_hit = serializers.BooleanField(help_text="Answered from the response cache (no provider call, cost 0)")
    tokens_prompt = serializers.IntegerField(source="input_tokens")
    tokens_completion = serializers.IntegerField(source="output_tokens")
    tokens_reasoning = serializers.IntegerField(source="reasoning_tokens")
    tokens_cached = serializers.IntegerField(source="cached_tokens")
    total_cost = serializers.DecimalField(
        source="cost", max_digits=18, decimal_places=10, coerce_to_string=False, help_text="USD"
    )
    provider_reported_cost = serializers.DecimalField(
        source="reported_cost",
        max_digits=24,
        decimal_places=10,
        coerce_to_string=False,
        allow_null=True,
        help_text="USD: what the provider's reported usage costs, when it exceeded the request's hold (null otherwise; "
        "`total_cost` is what was charged, the hold)",
    )
    latency_ms = serializers.IntegerField(allow_null=True, help_text="Arrival to the last byte of the answer")
    time_to_first_token_ms = serializers.IntegerField(source="ttft_ms", allow_null=True)
    tool_calls = serializers.IntegerField()
    session_id = serializers.SerializerMethodField()
    workspace_id = serializers.UUIDField(allow_null=True)
    api_key_hash = serializers.CharField(source="key_hash")
    error = serializers.SerializerMethodField(help_text="What the client got when the request failed")
    client_metadata = serializers.DictField(
        child=serializers.CharField(), help_text="The request's client_metadata (Codex CLI's turn and window ids)"
    )

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_finish_reason(self, row) -> str | None:
        return row.finish_reason or None

    @extend_schema_field(serializers.BooleanField())
    def get_cancelled(self, row) -> bool:
        return row.status == GenerationStatus.CANCELLED

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_session_id(self, row) -> str | None:
        return row.session_id or None

    @extend_schema_field(GenerationErrorSerializer(allow_null=True))
    def get_error(self, row) -> dict | None:
        if row.error_code is None and not row.error_message:
            return None
        return {"code": row.error_code, "message": row.error_message}


class GenerationResponseSerializer(serializers.Serializer):
    data = GenerationSerializer()
