"""Query parameters and documented shapes of the inference app's management-plane reads (models, generation)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gateway_project.api.errors import validation_error
from gateway_project.api.serializers import TimestampField
from inference.catalog_loader import OUTPUT_MODALITIES
from inference.catalog_selectors import ModelQuery
from inference.models import GenerationStatus


def reject_unknown(query_params, allowed: tuple[str, ...]) -> None:
    """400 naming the first query parameter the endpoint does not know (nothing is accepted and ignored)."""
    for name in query_params:
        if name not in allowed:
            raise validation_error(name, f"unknown query parameter (accepted: {', '.join(allowed) or 'none'})")


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class ModelsQuerySerializer(serializers.Serializer):
    supported_parameters = serializers.CharField(
        required=False,
        help_text="Comma-separated parameter names; only models whose endpoints support all of them are listed",
    )
    output_modalities = serializers.CharField(
        required=False,
        help_text=f"Comma-separated output modalities ({', '.join(OUTPUT_MODALITIES)}) or `all` (the default): "
        "models producing any of them are listed",
    )

    def validate_supported_parameters(self, value: str) -> str:
        if not _names(value):
            raise serializers.ValidationError("must name at least one parameter")
        return value

    def validate_output_modalities(self, value: str) -> str:
        names = _names(value)
        if not names:
            raise serializers.ValidationError("must name at least one modality, or `all`")
        unknown = [n for n in names if n not in (*OUTPUT_MODALITIES, "all")]
        if unknown:
            accepted = ", ".join((*OUTPUT_MODALITIES, "all"))
            raise serializers.ValidationError(f"unknown modality '{unknown[0]}' (one of {accepted})")
        return value

    def to_query(self) -> ModelQuery:
        data = self.validated_data
        modalities = _names(data.get("output_modalities") or "all")
        return ModelQuery(
            supported_parameters=tuple(_names(data.get("supported_parameters") or "")),
            output_modalities=None if "all" in modalities else frozenset(modalities),
        )


class ArchitectureSerializer(serializers.Serializer):
    modality = serializers.CharField(help_text="`text+image->text`")
    input_modalities = serializers.ListField(child=serializers.CharField())
    output_modalities = serializers.ListField(child=serializers.CharField())


class PricingSerializer(serializers.Serializer):
    prompt = serializers.CharField(help_text="USD per input token, decimal string")
    completion = serializers.CharField(help_text="USD per output token, decimal string")
    input_cache_read = serializers.CharField(required=False, help_text="USD per cached input token read")
    input_cache_write = serializers.CharField(required=False, help_text="USD per input token written to the cache")
    input_cache_write_1h = serializers.CharField(required=False, help_text="USD per token, 1-hour cache write")
    internal_reasoning = serializers.CharField(required=False, help_text="USD per reasoning token")
    request = serializers.CharField(required=False, help_text="USD per request")


class TopProviderSerializer(serializers.Serializer):
    provider = serializers.CharField()
    context_length = serializers.IntegerField(allow_null=True)
    max_completion_tokens = serializers.IntegerField(allow_null=True)


class LinksSerializer(serializers.Serializer):
    details = serializers.CharField(help_text="Path of the model's endpoints")


class CatalogModelSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="`vendor/name`: the `model` of inference requests")
    object = serializers.ChoiceField(choices=["model"])
    created = serializers.IntegerField(help_text="Unix time the model entered the catalog")
    owned_by = serializers.CharField(help_text="The model's vendor")
    name = serializers.CharField()
    canonical_slug = serializers.CharField()
    context_length = serializers.IntegerField(allow_null=True)
    architecture = ArchitectureSerializer()
    pricing = PricingSerializer()
    top_provider = TopProviderSerializer()
    supported_parameters = serializers.ListField(child=serializers.CharField())
    links = LinksSerializer()


class ModelListSerializer(serializers.Serializer):
    object = serializers.ChoiceField(choices=["list"])
    data = CatalogModelSerializer(many=True)


class DataPolicySerializer(serializers.Serializer):
    zdr = serializers.BooleanField(help_text="The provider keeps zero data")
    trains_on_data = serializers.BooleanField()
    publishes_prompts = serializers.BooleanField()


class CatalogEndpointSerializer(serializers.Serializer):
    name = serializers.CharField()
    model_id = serializers.CharField()
    provider = serializers.CharField(help_text="Provider slug, as `provider.only` and guardrails name it")
    provider_name = serializers.CharField()
    context_length = serializers.IntegerField(allow_null=True)
    max_completion_tokens = serializers.IntegerField(allow_null=True)
    pricing = PricingSerializer()
    is_free = serializers.BooleanField()
    supported_parameters = serializers.ListField(child=serializers.CharField())
    zdr = serializers.BooleanField()
    data_policy = DataPolicySerializer()
    regions = serializers.ListField(child=serializers.CharField(), help_text="Data regions the provider serves")


class ModelEndpointsSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    canonical_slug = serializers.CharField()
    created = serializers.IntegerField()
    architecture = ArchitectureSerializer()
    endpoints = CatalogEndpointSerializer(many=True)


class ModelEndpointsResponseSerializer(serializers.Serializer):
    data = ModelEndpointsSerializer()


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
    latency_ms = serializers.IntegerField(allow_null=True, help_text="Arrival to the last byte of the answer")
    time_to_first_token_ms = serializers.IntegerField(source="ttft_ms", allow_null=True)
    tool_calls = serializers.IntegerField()
    session_id = serializers.SerializerMethodField()
    workspace_id = serializers.UUIDField(allow_null=True)
    api_key_hash = serializers.CharField(source="key_hash")
    error = serializers.SerializerMethodField(help_text="What the client got when the request failed")

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
