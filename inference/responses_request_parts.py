"""The members' nested types of the typed Responses request (inference.responses_request): cache control,
reasoning, text format, tools, plugins, input items, stop conditions, provider preferences, ...

The 400 rules of the members without rules beyond their type (`model`, `models`, `transforms`, and the object
members `cache_control`, `debug`, `prompt`, `prompt_cache_options`, `reasoning`, `usage`) are generated from
their types (inference.schema.rule_of_type): a member's message is declared on its type (`Meta(extra={"error":
...})`, else derived from the type) and a struct with `forbid_unknown_fields` names the member it does not have
with its `unknown_member`. The others are
typed no stricter than the member's hand-written rule (inference.schema_parts, schema_provider, schema_rules),
which gives the 400 (tests/inference/test_responses_type.py checks they agree)."""

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from inference import schema_parts as parts
from inference import schema_provider as provider_rules
from inference import schema_rules as rules
from inference.plugins.file_parser import ENGINES as FILE_ENGINES
from inference.plugins.registry import PLUGIN_IDS
from inference.search.engines import ENGINE_NAMES


def one_of(values) -> Any:
    return Literal[tuple(sorted(values))]


NonBlank = Annotated[str, Meta(pattern=r"\S", extra={"error": "must be a non-empty string"})]
Identifier = Annotated[str, Meta(max_length=rules.MAX_IDENTIFIER)] | None


class CacheControl(msgspec.Struct):
    type: Annotated[Literal["ephemeral"], Meta(extra={"error": "is required and must be ephemeral"})]
    ttl: str | UnsetType = UNSET


class Debug(msgspec.Struct):
    echo_upstream_body: bool | UnsetType = UNSET


class Prompt(msgspec.Struct):
    id: Annotated[str, Meta(min_length=1, extra={"error": "is required and must be a string"})]
    variables: dict[str, Any] | None = None


class PromptCacheOptions(msgspec.Struct):
    mode: Annotated[Literal["explicit"], Meta(extra={"error": "must be explicit"})] | UnsetType = UNSET
    ttl: str | UnsetType = UNSET


class Reasoning(msgspec.Struct):
    effort: one_of(parts.REASONING_EFFORTS) | None = None
    summary: one_of(parts.REASONING_SUMMARIES) | None = None
    enabled: bool | None = None
    max_tokens: Annotated[int, Meta(ge=0, extra={"error": "must be a non-negative integer"})] | None = None


class TextFormatText(msgspec.Struct, tag_field="type", tag="text"):
    pass


class TextFormatJsonObject(msgspec.Struct, tag_field="type", tag="json_object"):
    pass


class TextFormatJsonSchema(msgspec.Struct, tag_field="type", tag="json_schema"):
    name: Annotated[str, Meta(min_length=1)]
    schema: dict[str, Any]
    strict: Annotated[Any, Meta(description="boolean or null")] = None


class Text(msgspec.Struct):
    format: TextFormatText | TextFormatJsonObject | TextFormatJsonSchema | None = None
    verbosity: one_of(parts.VERBOSITIES) | None = None


class ToolChoiceObject(msgspec.Struct):
    type: str


class Tool(msgspec.Struct):
    type: Annotated[str, Meta(min_length=1)]
    name: Annotated[str, Meta(min_length=1)] | UnsetType = UNSET
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    defer_loading: Annotated[bool, Meta(description=f"Needs the {parts.TOOL_SEARCH} server tool")] | None = None


def option(description: str) -> Any:
    """A member the rule of its container checks (a plugin's options: inference.plugins), documented here."""
    return Annotated[Any, Meta(description=description)]


class PdfOptions(msgspec.Struct):
    engine: option(f"one of {', '.join(FILE_ENGINES)}") = None
    max_pages: option("integer ≥ 1") = None


class Plugin(msgspec.Struct):
    """Each plugin's options are checked by its own rule (inference.plugins; a 400 naming the option)."""

    id: one_of(PLUGIN_IDS)
    enabled: bool | UnsetType = UNSET
    allowed_models: option("auto-router, auto-beta-router, pareto-router: model slugs") = None
    excluded_models: option("auto-router, auto-beta-router, pareto-router: model slugs") = None
    cost_tier: option("auto-router, auto-beta-router: a string") = None
    pin_model: option("auto-router, auto-beta-router, pareto-router: boolean") = None
    min_coding_score: option("pareto-router: 0..1") = None
    max_results: option("web: 1..20") = None
    search_prompt: option("web: at most 4000 characters") = None
    engine: option(f"web: one of {', '.join(ENGINE_NAMES)}; context-compression: middle-out") = None
    max_urls: option("web-fetch: 1..5") = None
    max_chars: option("web-fetch, fusion: integer ≥ 100") = None
    pdf: PdfOptions | UnsetType = UNSET
    analysis_models: option("fusion: 1 to 8 model slugs") = None
    detectors: option("moderation: built-in detector slugs (docs/guardrails.md)") = None
    check_output: option("moderation: boolean") = None


class ContentPart(msgspec.Struct):
    type: Annotated[str, Meta(description="input_text, output_text, input_image, input_file, ...")] | UnsetType = UNSET
    text: Annotated[str, Meta(description="input_text and output_text parts")] | None | UnsetType = UNSET


class InputItem(msgspec.Struct):
    """A message (the default `type`), or any other item (function_call, function_call_output, reasoning, ...),
    passed through; the rule of `input` checks messages (role, content parts)."""

    type: Annotated[str, Meta(min_length=1)] = "message"
    role: Annotated[str, Meta(description=f"a message's: {', '.join(sorted(parts.ROLES))}")] | UnsetType = UNSET
    content: str | list[ContentPart] | None | UnsetType = UNSET


Positive = Annotated[float, Meta(gt=0)]
PositiveInt = Annotated[int, Meta(gt=0)]


class StepCountIs(msgspec.Struct, tag_field="type", tag="step_count_is"):
    step_count: PositiveInt


class MaxCost(msgspec.Struct, tag_field="type", tag="max_cost"):
    max_cost_in_dollars: Positive


class HasToolCall(msgspec.Struct, tag_field="type", tag="has_tool_call"):
    tool_name: str


class MaxTokensUsed(msgspec.Struct, tag_field="type", tag="max_tokens_used"):
    max_tokens: PositiveInt


class FinishReasonIs(msgspec.Struct, tag_field="type", tag="finish_reason_is"):
    reason: str


StopCondition = StepCountIs | MaxCost | HasToolCall | MaxTokensUsed | FinishReasonIs
SortBy = one_of(provider_rules.SORT_BY)
Price = Annotated[float, Meta(ge=0)] | UnsetType


class Sort(msgspec.Struct):
    by: SortBy
    partition: one_of(provider_rules.SORT_PARTITIONS) | None = None


class MaxPrice(msgspec.Struct, forbid_unknown_fields=True):
    prompt: Price = UNSET
    completion: Price = UNSET
    request: Price = UNSET
    image: Annotated[Price, Meta(description="Not supported: the catalog has no per-image prices")] = UNSET


class Provider(msgspec.Struct, forbid_unknown_fields=True):
    order: list[str] | UnsetType = UNSET
    only: list[str] | UnsetType = UNSET
    ignore: list[str] | UnsetType = UNSET
    quantizations: Annotated[list[str], Meta(max_length=0, description=provider_rules.NO_DATA["quantizations"])] = []
    allow_fallbacks: bool | None = None
    require_parameters: bool | None = None
    zdr: bool | None = None
    data_collection: one_of(provider_rules.DATA_COLLECTION) | None = None
    sort: SortBy | Sort | None = None
    max_price: MaxPrice | UnsetType = UNSET
    preferred_min_throughput: Annotated[float, Meta(ge=0, description="Not supported: 400")] | None = None
    preferred_max_latency: Annotated[float, Meta(ge=0, description="Not supported: 400")] | None = None


class StreamOptions(msgspec.Struct, forbid_unknown_fields=True):
    include_usage: bool | UnsetType = UNSET
    include_obfuscation: Annotated[bool, Meta(description="Only false: events are never padded")] | UnsetType = UNSET


class Usage(msgspec.Struct, forbid_unknown_fields=True):
    unknown_member: ClassVar[str] = "unknown parameter (usage takes include)"

    include: bool | UnsetType = UNSET


Key = Annotated[str, Meta(max_length=rules.MAX_METADATA_KEY)]
Pairs = dict[Key, Annotated[str, Meta(max_length=rules.MAX_METADATA_VALUE)]]
ClientPairs = dict[Key, Annotated[str, Meta(max_length=rules.MAX_CLIENT_METADATA_VALUE)]]
