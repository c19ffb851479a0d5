"""Query parameters of GET /models, /models/count and /embeddings/models: the public router API's, each
honoured (catalog_query.py) or refused with a 400 that names it and says why.

Pagination: `offset` (>= 0) and `limit` (1..1000, the public router API's bounds: its SDK always sends
`offset=0&limit=500`); with neither, the whole list, as before pagination existed. The model list is the
catalog, not a management list, so it keeps the public API's bounds rather than the 1..100 of management lists.
"""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from gateway_project.api.errors import validation_error
from inference.catalog_loader import OUTPUT_MODALITIES
from inference.catalog_query import REGION_NAMES, SORTS, ModelQuery

# Output and input modalities the public router API names; those this catalog has no model for match nothing.
PUBLIC_OUTPUT_MODALITIES = (*OUTPUT_MODALITIES, "video", "rerank", "decisions", "speech", "transcription")
INPUT_MODALITIES = ("text", "image", "file", "audio", "video")
MAX_LIMIT = 1000

NO_BENCHMARKS = "the catalog carries no benchmark scores to filter by"
REFUSED = {
    "category": "the catalog has no use-case categories (filter by `q`, `supported_parameters` or modalities)",
    "arch": "the catalog names no model families (filter by `model_authors` or `q`)",
    "distillable": "the catalog does not say which models may be distilled",
    **{
        f"{bound}_{index}": NO_BENCHMARKS
        for bound in ("min", "max")
        for index in ("intelligence_index", "coding_index", "agentic_index")
    },
    "min_tool_success_rate": "tool-call success rates are not measured per model here",
    "max_tool_success_rate": "tool-call success rates are not measured per model here",
}
REFUSED_SORTS = (
    "intelligence-high-to-low",
    "coding-high-to-low",
    "agentic-high-to-low",
    "design-arena-elo-high-to-low",
)


def names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def refuse_unserved(query_params) -> None:
    """400 naming a public router API parameter this catalog cannot honour, with the reason."""
    for name in query_params:
        if name in REFUSED:
            raise validation_error(name, f"not supported: {REFUSED[name]}")


class PageQuerySerializer(serializers.Serializer):
    offset = serializers.IntegerField(required=False, min_value=0, help_text="Models to skip (default 0)")
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_LIMIT,
        help_text="Most models to return, 1..1000; with neither `offset` nor `limit` every model is returned",
    )

    def page(self) -> dict:
        data = self.validated_data
        return {"offset": data.get("offset") or 0, "limit": data.get("limit")}


def _price_field(what: str) -> serializers.DecimalField:
    return serializers.DecimalField(
        required=False, max_digits=20, decimal_places=8, min_value=Decimal(0), help_text=f"{what}, USD per 1M tokens"
    )


class ModelsQuerySerializer(PageQuerySerializer):
    supported_parameters = serializers.CharField(
        required=False,
        help_text="Comma-separated parameter names; only models whose endpoints support all of them are listed",
    )
    output_modalities = serializers.CharField(
        required=False,
        help_text=f"Comma-separated output modalities ({', '.join(PUBLIC_OUTPUT_MODALITIES)}) or `all` (the "
        "default): models producing any of them are listed",
    )
    input_modalities = serializers.CharField(
        required=False, help_text=f"Comma-separated input modalities ({', '.join(INPUT_MODALITIES)}): models taking all"
    )
    q = serializers.CharField(required=False, help_text="Case-insensitive text in the model's id or name")
    context = serializers.IntegerField(required=False, min_value=0, help_text="Least context length, tokens")
    min_price = _price_field("Least prompt price")
    max_price = _price_field("Highest prompt price")
    min_output_price = _price_field("Least completion price")
    max_output_price = _price_field("Highest completion price")
    model_authors = serializers.CharField(required=False, help_text="Comma-separated vendors (`openai,anthropic`)")
    providers = serializers.CharField(
        required=False, help_text="Comma-separated provider slugs or names: models with an endpoint of one of them"
    )
    zdr = serializers.ChoiceField(required=False, choices=["true"], help_text="`true`: models with a ZDR endpoint")
    region = serializers.ChoiceField(
        required=False, choices=list(REGION_NAMES), help_text="Models with an endpoint serving this data region"
    )
    min_age_days = serializers.IntegerField(required=False, min_value=0, help_text="Days since the model was added")
    max_age_days = serializers.IntegerField(required=False, min_value=0)
    sort = serializers.ChoiceField(
        required=False,
        choices=[*SORTS, *REFUSED_SORTS],
        help_text="newest, pricing-low-to-high, pricing-high-to-low (mean of prompt and completion price), "
        "context-high-to-low, most-popular (requests), top-weekly (tokens) over the last 7 days, "
        "latency-low-to-high, throughput-high-to-low (median of the last 30 minutes); models without traffic last",
    )

    def validate_supported_parameters(self, value: str) -> str:
        if not names(value):
            raise serializers.ValidationError("must name at least one parameter")
        return value

    def _modalities(self, value: str, accepted: tuple[str, ...]) -> str:
        found = names(value)
        if not found:
            raise serializers.ValidationError(f"must name at least one modality ({', '.join(accepted)})")
        unknown = [n for n in found if n not in accepted]
        if unknown:
            raise serializers.ValidationError(f"unknown modality '{unknown[0]}' (one of {', '.join(accepted)})")
        return value

    def validate_output_modalities(self, value: str) -> str:
        return self._modalities(value, (*PUBLIC_OUTPUT_MODALITIES, "all"))

    def validate_input_modalities(self, value: str) -> str:
        return self._modalities(value, INPUT_MODALITIES)

    def validate_sort(self, value: str) -> str:
        if value in REFUSED_SORTS:
            raise serializers.ValidationError(f"'{value}' is not supported: {NO_BENCHMARKS}")
        return value

    def to_query(self) -> ModelQuery:
        data = self.validated_data
        modalities = names(data.get("output_modalities") or "all")
        lower = lambda name: frozenset(n.lower() for n in names(data.get(name) or ""))  # noqa: E731
        return ModelQuery(
            supported_parameters=tuple(names(data.get("supported_parameters") or "")),
            output_modalities=None if "all" in modalities else frozenset(modalities),
            input_modalities=frozenset(names(data.get("input_modalities") or "")),
            q=(data.get("q") or "").strip().lower(),
            context=data.get("context"),
            min_price=data.get("min_price"),
            max_price=data.get("max_price"),
            min_output_price=data.get("min_output_price"),
            max_output_price=data.get("max_output_price"),
            model_authors=lower("model_authors"),
            providers=lower("providers"),
            zdr=data.get("zdr") == "true",
            region=data.get("region"),
            min_age_days=data.get("min_age_days"),
            max_age_days=data.get("max_age_days"),
            sort=data.get("sort"),
            **self.page(),
        )


class CountQuerySerializer(serializers.Serializer):
    """GET /models/count: the number of models GET /models lists for the same `output_modalities`."""

    output_modalities = serializers.CharField(
        required=False, help_text="As for GET /models: comma-separated output modalities, or `all` (the default)"
    )
