"""Loading a catalog file (YAML or JSON) into Provider, Model and Endpoint rows.

By default only entries missing from the database are created: `bootstrap` loads the catalog on every run, and a
price, flag or URL that staff changed in the admin must survive it. `update=True` (`load_catalog --update`)
overwrites existing rows with the file's values on purpose. Either way every entry is validated and the load is
all or nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction

from gateway_project.netguard import url_problem
from inference.models import ApiFormat, Endpoint, Model, Provider
from inference.provider_config import key_env_problem, timeouts_problem
from inference.routers.quality import quality_scores_problem

PROVIDER_FIELDS = (
    "name",
    "api_format",
    "base_url",
    "api_key_env",
    "zdr",
    "trains_on_data",
    "publishes_prompts",
    "regions",
    "timeouts",
    "enabled",
)
MODEL_FIELDS = (
    "canonical_slug",
    "name",
    "vendor",
    "public",
    "input_modalities",
    "output_modalities",
    "context_length",
    "quality_scores",
    "enabled",
)
ENDPOINT_FIELDS = (
    "upstream_model",
    "is_free",
    "context_length",
    "max_output_tokens",
    "supported_parameters",
    "enabled",
)
REQUIRED_PRICES = ("prompt_price", "completion_price")
OPTIONAL_PRICES = (
    "cached_prompt_price",
    "cache_write_5m_price",
    "cache_write_1h_price",
    "reasoning_price",
    "request_price",
)
PRICE_FIELDS = REQUIRED_PRICES + OPTIONAL_PRICES
MEDIA_FIELDS = ("max_image_tokens", "max_audio_tokens", "max_file_tokens")


OUTPUT_MODALITIES = ("text", "image", "audio", "embeddings", "moderation")
EMBEDDINGS = "embeddings"  # an embeddings model has this output modality alone and is served by POST /embeddings
EMBEDDINGS_FORMATS = ("openai-responses", "openai-chat", "echo")  # provider formats with an embeddings API
# A moderation model (OpenAI-compatible POST /moderations) has this output modality alone; the moderation plugin
# calls it, nothing routes requests to it.
MODERATION = "moderation"
MODERATION_FORMATS = ("openai-responses", "openai-chat")


def _check_output_modalities(value: Any, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(v, str) and v in OUTPUT_MODALITIES for v in value):
        raise CatalogError(f"{where}: 'output_modalities' must be a list of {', '.join(OUTPUT_MODALITIES)}")
    for alone in (EMBEDDINGS, MODERATION):
        if alone in value and len(value) > 1:
            raise CatalogError(f"{where}: 'output_modalities' [{alone}] cannot be combined with other modalities")


class CatalogError(ValueError):
    """A catalog file that cannot be loaded; the message names the entry and field."""


@dataclass
class CatalogSummary:
    providers: int = 0
    models: int = 0
    endpoints: int = 0
    added: int = 0
    updated: int = 0
    kept: int = 0  # existing rows left as they are (update=False)

    def __str__(self) -> str:
        counts = f"{self.providers} providers, {self.models} models, {self.endpoints} endpoints"
        return f"{counts} ({self.added} added, {self.updated} updated, {self.kept} existing left unchanged)"

    def upsert(self, model_cls, lookup: dict[str, Any], defaults: dict[str, Any], *, update: bool):
        """Create the row if missing; overwrite it only when `update`."""
        row = model_cls.objects.filter(**lookup).first()
        if row is None:
            self.added += 1
            return model_cls.objects.create(**lookup, **defaults)
        if not update:
            self.kept += 1
            return row
        for name, value in defaults.items():
            setattr(row, name, value)
        row.save()
        self.updated += 1
        return row


def read_catalog_file(path: str | Path) -> dict[str, Any]:
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise CatalogError("the catalog must be a mapping with providers, models and endpoints")
    return data


def _require(entry: dict, field: str, where: str) -> Any:
    if entry.get(field) in (None, ""):
        raise CatalogError(f"{where}: '{field}' is required")
    return entry[field]


def _decimal(value: Any, field: str, where: str) -> Decimal:
    if isinstance(value, bool):
        raise CatalogError(f"{where}: '{field}' must be a decimal string")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise CatalogError(f"{where}: '{field}' must be a decimal string") from None
    if not number.is_finite() or number < 0:
        raise CatalogError(f"{where}: '{field}' must be a finite number, not negative")
    return number


def _price(entry: dict, field: str, where: str) -> Decimal | None:
    """A price of the sheet. An endpoint must state its prompt and completion prices, or `is_free: true`: a
    missing price is never taken as $0 (that would make every request under a budget free)."""
    value = entry.get(field)
    if value is None:
        if field in REQUIRED_PRICES:
            if entry.get("is_free") is True:
                return Decimal(0)
            raise CatalogError(f"{where}: '{field}' is required (or mark the endpoint 'is_free: true')")
        return None
    return _decimal(value, field, where)


def _tier_multipliers(entry: dict, where: str) -> dict[str, str]:
    value = entry.get("tier_multipliers") or {}
    if not isinstance(value, dict):
        raise CatalogError(f"{where}: 'tier_multipliers' must be a mapping of tier name to multiplier")
    return {str(tier): str(_decimal(m, f"tier_multipliers.{tier}", where)) for tier, m in value.items()}


def _media(entry: dict, field: str, where: str) -> int | None:
    value = entry.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CatalogError(f"{where}: '{field}' must be an integer >= 1 (tokens one item can cost at most)")
    return value


@transaction.atomic
def load_catalog(data: dict[str, Any], *, update: bool = False) -> CatalogSummary:
    """Create every provider, model and endpoint of `data` that is missing (and overwrite the others when
    `update`). All or nothing."""
    summary = CatalogSummary()
    formats = set(ApiFormat.values)
    for i, entry in enumerate(data.get("providers") or []):
        where = f"providers[{i}]"
        slug = _require(entry, "slug", where)
        if _require(entry, "api_format", where) not in formats:
            raise CatalogError(f"{where}: 'api_format' must be one of {sorted(formats)}")
        base_url = entry.get("base_url")
        if base_url and isinstance(base_url, str) and (problem := url_problem(base_url)):
            raise CatalogError(f"{where}: 'base_url' {problem}")
        if problem := key_env_problem(entry.get("api_key_env") or ""):
            raise CatalogError(f"{where}: 'api_key_env' {problem}")
        if "timeouts" in entry and (problem := timeouts_problem(entry["timeouts"])):
            raise CatalogError(f"{where}: 'timeouts' {problem}")
        defaults = {f: entry[f] for f in PROVIDER_FIELDS if f in entry}
        defaults.setdefault("name", slug)
        summary.upsert(Provider, {"slug": slug}, defaults, update=update)
        summary.providers += 1
    for i, entry in enumerate(data.get("models") or []):
        where = f"models[{i}]"
        slug = _require(entry, "slug", where)
        defaults = {f: entry[f] for f in MODEL_FIELDS if f in entry}
        _check_output_modalities(entry.get("output_modalities"), where)
        if problem := quality_scores_problem(entry.get("quality_scores")):
            raise CatalogError(f"{where}: 'quality_scores' {problem}")
        defaults.setdefault("canonical_slug", slug)
        defaults.setdefault("vendor", slug.split("/", 1)[0])
        summary.upsert(Model, {"slug": slug}, defaults, update=update)
        summary.models += 1
    for i, entry in enumerate(data.get("endpoints") or []):
        where = f"endpoints[{i}]"
        model = Model.objects.filter(slug=_require(entry, "model", where)).first()
        if model is None:
            raise CatalogError(f"{where}: unknown model '{entry['model']}'")
        provider = Provider.objects.filter(slug=_require(entry, "provider", where)).first()
        if provider is None:
            raise CatalogError(f"{where}: unknown provider '{entry['provider']}'")
        if MODERATION in (model.output_modalities or ()) and not entry.get("is_free"):
            raise CatalogError(
                f"{where}: the moderation model '{model.slug}' must be `is_free: true` (the moderation plugin charges "
                "nothing for its calls)"
            )
        if MODERATION in (model.output_modalities or ()) and provider.api_format not in MODERATION_FORMATS:
            raise CatalogError(
                f"{where}: provider '{provider.slug}' ({provider.api_format}) has no OpenAI-compatible /moderations "
                f"API for the moderation model '{model.slug}' (formats with one: {', '.join(MODERATION_FORMATS)})"
            )
        if EMBEDDINGS in (model.output_modalities or ()) and provider.api_format not in EMBEDDINGS_FORMATS:
            raise CatalogError(
                f"{where}: provider '{provider.slug}' ({provider.api_format}) has no embeddings API for the "
                f"embeddings model '{model.slug}' (formats with one: {', '.join(EMBEDDINGS_FORMATS)})"
            )
        defaults = {f: entry[f] for f in ENDPOINT_FIELDS if f in entry}
        defaults.setdefault("upstream_model", model.slug.split("/", 1)[-1])
        declared = entry.get("supported_parameters")
        if declared is not None and (
            not isinstance(declared, list) or not all(isinstance(p, str) and p.strip() for p in declared)
        ):
            raise CatalogError(f"{where}: 'supported_parameters' must be a list of parameter names")
        if "is_free" in entry and not isinstance(entry["is_free"], bool):
            raise CatalogError(f"{where}: 'is_free' must be a boolean")
        for field in PRICE_FIELDS:
            defaults[field] = _price(entry, field, where)
        for field in MEDIA_FIELDS:
            defaults[field] = _media(entry, field, where)
        defaults["tier_multipliers"] = _tier_multipliers(entry, where)
        summary.upsert(Endpoint, {"model": model, "provider": provider}, defaults, update=update)
        summary.endpoints += 1
    return summary


def load_catalog_file(path: str | Path, *, update: bool = False) -> CatalogSummary:
    return load_catalog(read_catalog_file(path), update=update)
