"""Documented shapes (OpenAPI) of the catalog reads: GET /models, /model/{author}/{slug}, /models/count,
/models/{vendor}/{name}/endpoints, /endpoints/zdr, /providers and /embeddings/models."""

from __future__ import annotations

from rest_framework import serializers


class ArchitectureSerializer(serializers.Serializer):
    modality = serializers.CharField(help_text="`text+image->text`")
    input_modalities = serializers.ListField(child=serializers.CharField())
    output_modalities = serializers.ListField(child=serializers.CharField())
    tokenizer = serializers.CharField(allow_null=True, help_text="Always null: the catalog does not state it")
    instruct_type = serializers.CharField(allow_null=True, help_text="Always null: the catalog does not state it")


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
    is_moderated = serializers.BooleanField(help_text="The calling key's guardrails filter its requests' content")


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
    default_parameters = serializers.DictField(allow_null=True, help_text="Always null: no catalog defaults")
    per_request_limits = serializers.DictField(allow_null=True, help_text="Always null: no per-request caps")
    supported_voices = serializers.ListField(
        child=serializers.CharField(), allow_null=True, help_text="Always null: no speech output models"
    )
    links = LinksSerializer()


class PageLinksSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True, help_text="Path of the next page; null on the last one")


class ModelListSerializer(serializers.Serializer):
    object = serializers.ChoiceField(choices=["list"])
    data = CatalogModelSerializer(many=True)
    total_count = serializers.IntegerField(help_text="Models matching the filters, on every page")
    links = PageLinksSerializer()


class ModelResponseSerializer(serializers.Serializer):
    data = CatalogModelSerializer()


class CountSerializer(serializers.Serializer):
    count = serializers.IntegerField()


class CountResponseSerializer(serializers.Serializer):
    data = CountSerializer()


class DataPolicySerializer(serializers.Serializer):
    zdr = serializers.BooleanField(help_text="The provider keeps zero data")
    trains_on_data = serializers.BooleanField()
    publishes_prompts = serializers.BooleanField()


class PercentilesSerializer(serializers.Serializer):
    p50 = serializers.FloatField()
    p75 = serializers.FloatField()
    p90 = serializers.FloatField()
    p99 = serializers.FloatField()


class ToolChoiceSupportSerializer(serializers.Serializer):
    auto = serializers.BooleanField()
    none = serializers.BooleanField()
    required = serializers.BooleanField()
    function = serializers.BooleanField()


class CatalogEndpointSerializer(serializers.Serializer):
    name = serializers.CharField()
    model_id = serializers.CharField()
    model_name = serializers.CharField()
    provider = serializers.CharField(help_text="Provider slug, as `provider.only` and guardrails name it")
    provider_name = serializers.CharField()
    tag = serializers.CharField(help_text="The provider slug (what `provider.order` takes)")
    context_length = serializers.IntegerField()
    max_completion_tokens = serializers.IntegerField(allow_null=True)
    max_prompt_tokens = serializers.IntegerField(allow_null=True, help_text="Always null: no separate prompt cap")
    pricing = PricingSerializer()
    is_free = serializers.BooleanField()
    quantization = serializers.CharField(allow_null=True, help_text="Always null: the catalog does not state it")
    service_tier = serializers.CharField(allow_null=True, help_text="Always null: no fixed tier per endpoint")
    supported_parameters = serializers.ListField(child=serializers.CharField())
    supports_tool_choice = ToolChoiceSupportSerializer(help_text="Every form, when `tool_choice` is supported")
    supports_implicit_caching = serializers.BooleanField(
        help_text="Cached input is billed (cache read price) without a cache-write price"
    )
    supports_diarization = serializers.BooleanField()
    native_tools = serializers.DictField(help_text="Always empty: server tools run in the gateway")
    zdr = serializers.BooleanField()
    data_policy = DataPolicySerializer()
    regions = serializers.ListField(child=serializers.CharField(), help_text="Data regions the provider serves")
    uptime_last_5m = serializers.FloatField(allow_null=True, help_text="Percent; null without traffic")
    uptime_last_30m = serializers.FloatField(allow_null=True, help_text="Percent; null without traffic")
    uptime_last_1d = serializers.FloatField(allow_null=True, help_text="Percent; null without traffic")
    latency_last_30m = PercentilesSerializer(allow_null=True, help_text="Time to first token, ms")
    throughput_last_30m = PercentilesSerializer(allow_null=True, help_text="Output tokens per second")


class ModelEndpointsSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    canonical_slug = serializers.CharField()
    created = serializers.IntegerField()
    description = serializers.CharField(help_text="What the catalog says of the model, in a sentence")
    architecture = ArchitectureSerializer()
    endpoints = CatalogEndpointSerializer(many=True)


class ModelEndpointsResponseSerializer(serializers.Serializer):
    data = ModelEndpointsSerializer()


class ZdrEndpointsResponseSerializer(serializers.Serializer):
    data = CatalogEndpointSerializer(many=True)


class ProviderSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    privacy_policy_url = serializers.CharField(allow_null=True, help_text="Always null: not in the catalog")
    terms_of_service_url = serializers.CharField(allow_null=True, help_text="Always null: not in the catalog")
    status_page_url = serializers.CharField(allow_null=True, help_text="Always null: not in the catalog")
    zdr = serializers.BooleanField()
    trains_on_data = serializers.BooleanField()
    publishes_prompts = serializers.BooleanField()
    regions = serializers.ListField(child=serializers.CharField())


class ProvidersResponseSerializer(serializers.Serializer):
    data = ProviderSerializer(many=True)
