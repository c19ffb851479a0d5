"""GET /generation's record: the Generation row's own fields (GenerationSerializer) and, under the public router
API's names, every field its SDK's `generations.get_generation()` reads, each taken from the row.

Nothing is made up: a figure the gateway does not record for a request is null (never a guessed constant).
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlsplit

from rest_framework import serializers

from inference.models import Generation, GenerationStatus, IngressFormat
from inference.routers.options import SLUG_ROUTERS
from inference.serializers import GenerationSerializer

NOT_RECORDED = (
    "app_id",
    "external_user",
    "moderation_latency",
    "native_finish_reason",
    "native_tokens_completion_images",
    "num_fetches",
    "num_input_audio_prompt",
    "num_media_completion",
    "num_media_prompt",
    "num_search_results",
    "preset_id",
    "service_tier",
    "web_search_engine",
)


def origin(referer: str) -> str:
    """`https://app.example/` of a referer URL; empty when the request named none (or not a URL)."""
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else ""


def cache_discount(row: Generation) -> float | None:
    """What reading cached input saved against the prompt price: cached tokens x (prompt - cache read price)."""
    endpoint = row.endpoint
    if endpoint is None:
        return None
    read_price = endpoint.cached_prompt_price if endpoint.cached_prompt_price is not None else endpoint.prompt_price
    return float(Decimal(row.cached_tokens) * (endpoint.prompt_price - read_price))


def provider_name(row: Generation) -> str | None:
    if row.endpoint is not None:
        return row.endpoint.provider.name
    return row.provider or None


def provider_responses(row: Generation) -> list[dict] | None:
    """The attempt that answered (earlier fallback attempts are not recorded); null when no provider was called."""
    if row.endpoint_id is None or row.cache_hit:
        return None
    return [
        {
            "status": row.error_code if row.status == GenerationStatus.FAILED else 200,
            "endpoint_id": str(row.endpoint_id),
            "id": row.upstream_id or None,
            "is_byok": row.is_byok,
            "latency": row.latency_ms,
            "model_permaslug": row.model_permaslug or row.model,
            "provider_name": provider_name(row),
        }
    ]


def router_fields(row: Generation) -> dict:
    native = not row.usage_estimated  # the provider reported these counts (else they are the gateway's estimate)
    generation_time = None
    if row.latency_ms is not None and row.ttft_ms is not None:
        generation_time = max(row.latency_ms - row.ttft_ms, 0)
    return {
        **dict.fromkeys(NOT_RECORDED),
        "request_id": str(row.id),
        "api_type": "embeddings" if row.ingress_format == IngressFormat.EMBEDDINGS else "completions",
        "cache_discount": cache_discount(row),
        "data_region": row.data_region,
        "generation_time": generation_time,
        "latency": row.latency_ms,
        "http_referer": row.http_referer or None,
        "origin": origin(row.http_referer),
        "user_agent": row.user_agent or None,
        "native_tokens_prompt": row.input_tokens if native else None,
        "native_tokens_completion": row.output_tokens if native else None,
        "native_tokens_reasoning": row.reasoning_tokens if native else None,
        "native_tokens_cached": row.cached_tokens if native else None,
        "provider_name": provider_name(row),
        "provider_responses": provider_responses(row),
        "router": row.requested_model if row.requested_model in SLUG_ROUTERS else None,
        "usage": float(row.cost),
        "upstream_inference_cost": 0.0 if row.cache_hit else float(row.cost),
    }


class GenerationRecordSerializer(GenerationSerializer):
    """GET /generation's `data` (the row's fields plus the public router API's names, see router_fields)."""

    def to_representation(self, row):
        return {**super().to_representation(row), **router_fields(row)}


class GenerationRecordSchema(GenerationSerializer):
    """The documented shape of GenerationRecordSerializer (OpenAPI)."""

    request_id = serializers.CharField()
    api_type = serializers.ChoiceField(choices=["completions", "embeddings"])
    cache_discount = serializers.FloatField(allow_null=True, help_text="USD saved by cached input reads")
    data_region = serializers.CharField(help_text="global | europe | us: where the request arrived")
    generation_time = serializers.IntegerField(allow_null=True, help_text="ms from the first token to the last")
    latency = serializers.IntegerField(allow_null=True, help_text="ms from arrival to the last byte")
    http_referer = serializers.CharField(allow_null=True)
    origin = serializers.CharField(help_text="scheme://host/ of http_referer; empty without one")
    user_agent = serializers.CharField(allow_null=True)
    native_tokens_prompt = serializers.IntegerField(allow_null=True)
    native_tokens_completion = serializers.IntegerField(allow_null=True)
    native_tokens_reasoning = serializers.IntegerField(allow_null=True)
    native_tokens_cached = serializers.IntegerField(allow_null=True)
    provider_name = serializers.CharField(allow_null=True)
    provider_responses = serializers.ListField(child=serializers.DictField(), allow_null=True)
    router = serializers.CharField(allow_null=True)
    usage = serializers.FloatField(help_text="USD, as total_cost")
    upstream_inference_cost = serializers.FloatField(help_text="USD the provider bills at the catalog's prices")
    app_id = serializers.IntegerField(allow_null=True, help_text="Always null: no app registry")
    external_user = serializers.CharField(allow_null=True, help_text="Always null: no partner end users")
    moderation_latency = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    native_finish_reason = serializers.CharField(allow_null=True, help_text="Always null: not recorded apart")
    native_tokens_completion_images = serializers.IntegerField(allow_null=True, help_text="Always null")
    num_fetches = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    num_input_audio_prompt = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    num_media_completion = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    num_media_prompt = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    num_search_results = serializers.IntegerField(allow_null=True, help_text="Always null: not recorded")
    preset_id = serializers.CharField(allow_null=True, help_text="Always null: not recorded")
    service_tier = serializers.CharField(allow_null=True, help_text="Always null: not recorded")
    web_search_engine = serializers.CharField(allow_null=True, help_text="Always null: not recorded")


class GenerationRecordResponseSchema(serializers.Serializer):
    data = GenerationRecordSchema()
