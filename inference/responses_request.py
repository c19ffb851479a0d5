"""The Responses request body, typed once (msgspec): the canonical request every wire format converts into.

`ResponsesRequest` declares each top-level member: its JSON type with enums, bounds and lengths (what
msgspec validates, what the OpenAPI schema shows: inference.openapi), and in its `Meta.extra`:
- `member`: what the gateway does with it (the row of the Responses member table: inference.members);
- `check`: the member's rule with the gateway's own 400 message, when the type alone cannot say it (a member
  without one gets a rule derived from its type: inference.schema);
- `rule: True`: that rule also runs on every request carrying the member, because it checks more than the
  type states (items of `input` and `tools`, plugin options, `store: false`, ...).
`REFUSED_MEMBERS` are members of other formats, a 400 naming them with the reason. The gateway keeps the body
as the decoded dict (the pipeline reads and edits it); the struct is the description and the validator.
"""

import typing
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta

from inference import schema_parts as parts
from inference import schema_provider as provider_rules
from inference import schema_rules as rules
from inference.member_kinds import (
    CACHE,
    CACHE_KEY,
    GATEWAY,
    HONOURED,
    MODELS,
    PARTLY,
    ROUTER,
    ROUTING,
    SAMPLING,
    SPEED_REFUSED,
    TEMPERATURE,
    TIER,
    TRANSFORMS,
    Member,
)
from inference.responses_request_parts import (
    CacheControl,
    ClientPairs,
    Debug,
    Identifier,
    InputItem,
    NonBlank,
    Pairs,
    Plugin,
    Prompt,
    PromptCacheOptions,
    Provider,
    Reasoning,
    StopCondition,
    StreamOptions,
    Text,
    Tool,
    ToolChoiceObject,
    Usage,
    one_of,
)


def member(
    tp: Any,
    handling: str,
    note: str = "",
    *,
    check=None,
    rule=False,
    shared=False,
    preset=False,
    doc: str = "",
    **schema,
):
    """`tp` with its member-table row, its rule (see the module docstring) and its OpenAPI description. `shared`
    (the ingress types): the member has a Responses member's name, type and meaning, and is checked by its rule.
    `preset`: a preset made from a body of this format keeps the member (presets.config)."""
    extra = {"member": Member(handling, note), "check": check, "rule": rule, "shared": shared, "preset": preset}
    return Annotated[tp, Meta(description=doc or note or None, extra=extra, extra_json_schema=schema or None)]


def declared(tp: Any) -> tuple[Any, dict[str, Any]]:
    """A member's type without its declaration, and the declaration's `extra` (the last Meta: Annotated types
    nest flat, after any constraint of the type itself)."""
    base, *metas = typing.get_args(tp)
    return (typing.Annotated[(base, *metas[:-1])] if len(metas) > 1 else base), metas[-1].extra


def number(low: float, high: float) -> Any:
    return Annotated[float, Meta(ge=low, le=high)] | None


def integer(low: int, high: int | None = None) -> Any:
    return Annotated[int, Meta(ge=low, le=high)]


INCLUDE_VALUES = frozenset(
    {
        "file_search_call.results",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
        "reasoning.encrypted_content",
        "code_interpreter_call.outputs",
    }
)
SERVICE_TIERS = frozenset({"auto", "default", "fast", "flex", "priority", "scale"})
TRUNCATION_VALUES = frozenset({"auto", "disabled"})
ROUTE_VALUES = frozenset({"fallback", "sort"})
MODALITIES = frozenset({"text", "image"})
TOOLS_DOC = (
    "Function tools, provider tool kinds, and the server tools the gateway runs itself: `service:web_search`, "
    "`service:tool_search`, `service:web_fetch`, each with optional `parameters` (docs/server-tools.md); another "
    "`service:*` kind is refused with 400. A `namespace` tool (a group of function tools) goes to Responses "
    "providers as it is and to other formats as `namespace__name` functions, its calls answered with their "
    "`namespace`. The hosted `web_search` runs on the gateway's search engine when one is configured, else goes "
    "to an openai-responses provider (400 elsewhere)."
)
PLUGINS_DOC = (
    "Implemented: `web` (max_results, search_prompt, engine), `web-fetch` (max_urls, max_chars), `auto-router` / "
    "`auto-beta-router` (allowed_models, excluded_models, cost_tier, pin_model), `pareto-router` (min_coding_score, "
    "allowed_models, excluded_models, pin_model), `fusion` (analysis_models, max_chars), `file-parser` (pdf.engine "
    "pdf-text|native, pdf.max_pages), `response-healing`, `context-compression` (engine middle-out), `moderation` "
    "(detectors, check_output); an id outside the contract is refused with 400 naming it (docs/plugins.md)."
)
IMAGE_NOTE = "with `image`: only `openai-chat` endpoints of image models (400 otherwise)"
LOOP_BOUND = "bound of the server-tool loop"
TRANSFORM_ERROR = "must be middle-out (the only transform)"
STATELESS = "only null: the API is stateless; send the full history in input"


class ResponsesRequest(msgspec.Struct, omit_defaults=True, gc=False):
    """An OpenAI Responses request. `model` (or `models`) and `input` are what a minimal request carries. Other
    members go as sent to openai-responses upstreams (a 400 naming them when translated)."""

    model: member(NonBlank, HONOURED, "the catalog slug; `@preset/<slug>` applies a preset",
                  example="echo/echo-1", preset=True) = ""  # fmt: skip
    models: member(Annotated[list[NonBlank], Meta(extra={"error": "must be an array of model slugs"})], GATEWAY, MODELS,
                   preset=True) = UNSET  # fmt: skip
    input: member(str | list[InputItem], HONOURED, "a string or items", check=parts.check_input, rule=True,
                  doc="A string (one user message) or an array of input items.") = ""  # fmt: skip
    instructions: member(str | None, HONOURED) = None
    tools: member(list[Tool] | None, HONOURED, "function tools; `service:` server tools run by the gateway",
                  check=parts.check_tools, rule=True, doc=TOOLS_DOC, preset=True) = None  # fmt: skip
    tool_choice: member(one_of(parts.TOOL_CHOICE_STRINGS) | ToolChoiceObject | None, HONOURED,
                        "`allowed_tools`: other formats are sent only the allowed tools",
                        check=parts.check_tool_choice, preset=True) = None  # fmt: skip
    parallel_tool_calls: member(bool | None, HONOURED, preset=True) = None
    max_tool_calls: member(integer(0, rules.MAX_TOOL_CALLS) | None, HONOURED,
                           "also bounds the gateway's server-tool loop", preset=True) = None  # fmt: skip
    text: member(Text | None, HONOURED, "format (text, json_object, json_schema), verbosity (low, high: OpenAI "
                 "endpoints only)",
                 check=parts.check_text, preset=True) = None  # fmt: skip
    reasoning: member(Reasoning | None, HONOURED, "effort, summary (concise, detailed: openai-responses only; "
                      "auto everywhere), enabled, max_tokens; "
                      "Anthropic endpoints need `max_output_tokens` above 1024 and no forced tool",
                      preset=True) = None  # fmt: skip
    max_output_tokens: member(integer(1) | None, HONOURED, preset=True) = None
    temperature: member(number(0, 2), ROUTER, f"{TEMPERATURE}; {SAMPLING}", preset=True) = None
    top_p: member(number(0, 1), ROUTER, f"0..1; {SAMPLING}", preset=True) = None
    top_k: member(integer(0), ROUTER, f"integer ≥ 0; {SAMPLING}", preset=True) = 0
    min_p: member(number(0, 1), ROUTER, f"0..1; {SAMPLING}") = None
    top_a: member(number(0, 1), ROUTER, f"0..1; {SAMPLING}") = None
    frequency_penalty: member(number(-2, 2), ROUTER, f"-2..2; {SAMPLING}", preset=True) = None
    presence_penalty: member(number(-2, 2), ROUTER, f"-2..2; {SAMPLING}", preset=True) = None
    repetition_penalty: member(number(0, 2), ROUTER, f"0..2; {SAMPLING}") = None
    top_logprobs: member(integer(0, 20) | None, ROUTER, f"0..20; {SAMPLING}; returned by openai-chat and "
                        "openai-responses endpoints (JSON and streamed), Anthropic endpoints skipped (none left → 400)",
                        preset=True) = None  # fmt: skip
    cache_control: member(CacheControl | None, ROUTER, CACHE, preset=True) = None
    stream: member(bool, HONOURED, "Responses events", doc="true answers text/event-stream") = False
    stream_options: member(StreamOptions | None, PARTLY,
                           "the stream always ends with the usage; `include_obfuscation: true` → 400",
                           check=rules.check_stream_options, rule=True) = None  # fmt: skip
    include: member(list[one_of(INCLUDE_VALUES)] | None, HONOURED,
                    "`openai-responses` endpoints; `reasoning.encrypted_content` on every format (the reasoning the "
                    "provider signed or encrypted is returned)", preset=True) = None  # fmt: skip
    metadata: member(Annotated[Pairs, Meta(max_length=rules.MAX_METADATA_PAIRS)] | None, GATEWAY,
                     "kept for accounting and observability", check=rules.check_metadata, rule=True,
                     doc=f"String pairs; keys at most {rules.MAX_METADATA_KEY} characters, without brackets.",
                     ) = None  # fmt: skip
    client_metadata: member(Annotated[ClientPairs, Meta(max_length=rules.MAX_CLIENT_METADATA_PAIRS)] | None,
                            HONOURED, "`openai-responses` endpoints; recorded on the Generation for every format",
                            check=rules.check_client_metadata) = None  # fmt: skip
    user: member(Identifier, HONOURED, "hashed before it reaches a provider") = None
    safety_identifier: member(Identifier, HONOURED, "hashed before it reaches a provider") = None
    prompt_cache_key: member(str | None, HONOURED, CACHE_KEY) = None
    prompt_cache_options: member(PromptCacheOptions | None, HONOURED,
                                 "`openai-responses` endpoints only (others skipped; none → 400)",
                                 preset=True) = None  # fmt: skip
    prompt: member(Prompt | None, HONOURED, "`openai-responses` endpoints only (others skipped; none → 400)") = None
    service_tier: member(one_of(SERVICE_TIERS) | None, HONOURED, TIER, preset=True) = None
    truncation: member(one_of(TRUNCATION_VALUES) | None, HONOURED, "auto, disabled", preset=True) = None
    modalities: member(list[one_of(MODALITIES)], HONOURED, IMAGE_NOTE, preset=True) = UNSET
    image_config: member(dict[str, str | float | list[Any]] | None, HONOURED, "needs `modalities` with `image`",
                         check=parts.check_image_config, preset=True) = None  # fmt: skip
    store: member(bool, PARTLY, "only false: the API stores no responses", check=rules.check_store, rule=True,
                  enum=[False]) = False  # fmt: skip
    background: member(bool | None, PARTLY, "only false: the API is stateless", check=rules.check_background,
                       rule=True, enum=[False, None]) = None  # fmt: skip
    previous_response_id: member(None, PARTLY, STATELESS, check=rules.check_stateless) = None
    conversation: member(None, PARTLY, STATELESS, check=rules.check_stateless) = None
    stop_server_tools_when: member(Annotated[list[StopCondition], Meta(min_length=1)], GATEWAY, LOOP_BOUND,
                                   check=parts.check_stop_conditions, preset=True) = UNSET  # fmt: skip
    provider: member(Provider | None, GATEWAY, ROUTING, check=provider_rules.check_provider, rule=True, preset=True) = (
        None
    )
    route: member(one_of(ROUTE_VALUES) | None, GATEWAY, ROUTING, preset=True) = None
    session_id: member(Identifier, GATEWAY, "sticky routing, observability") = None
    trace: member(dict[str, Any] | None, GATEWAY, "observability") = None
    plugins: member(list[Plugin], GATEWAY, "docs/plugins.md", check=parts.check_plugins, rule=True,
                    doc=PLUGINS_DOC, preset=True) = UNSET  # fmt: skip
    transforms: member(list[Annotated[Literal["middle-out"], Meta(extra={"error": TRANSFORM_ERROR})]] | None, GATEWAY,
                       TRANSFORMS) = None  # fmt: skip
    usage: member(Usage | None, GATEWAY,
                  "`{include}`: usage with `cost` is in every answer and at the end of every stream",
                  ) = None  # fmt: skip
    debug: member(Debug | None, GATEWAY,
                  "`{echo_upstream_body}`: the upstream body, in the first event of a stream or the JSON answer",
                  ) = None  # fmt: skip


REFUSED_MEMBERS = {"speed": SPEED_REFUSED}  # members of another format: a 400 with the reason


def same(name: str) -> Any:
    """The type of the Responses member `name` (for an ingress member with the same meaning)."""
    return declared(ResponsesRequest.__annotations__[name])[0]


def responses_member(name: str, note: str | None = None, *, handling: str | None = None, nullable: bool = False,
                     shared: bool = True, preset: bool = False) -> Any:  # fmt: skip
    """The Responses member `name` declared in an ingress type (inference.chat_request_type,
    messages_request_type): its type, handling, note and OpenAPI description, defined once here, unless the
    format gives its own `note` or `handling`; its rule too (`check`, else the one generated from the type).
    `nullable`: null is taken as absent (the Messages ingress).
    `shared`: the ingress copies it into the canonical body as sent and explains it by the Responses rule."""
    tp, extra = declared(ResponsesRequest.__annotations__[name])
    meta = typing.get_args(ResponsesRequest.__annotations__[name])[-1]
    row = extra["member"]
    return member(
        tp | None if nullable else tp,
        handling or row.handling,
        row.note if note is None else note,
        check=extra["check"],
        shared=shared,
        preset=preset,
        doc=(meta.description or "") if note is None else "",
        **(meta.extra_json_schema or {}),
    )


def declared_members(struct: type[msgspec.Struct]) -> dict[str, dict[str, Any]]:
    """Each member of a typed request with its declaration (`member`, `check`, `rule`, `shared`, `preset`), in
    order."""
    return {field.name: declared(field.type)[1] for field in msgspec.structs.fields(struct)}


def preset_members(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    """The members a preset made from a body of this type keeps (declared `preset`), in order."""
    return tuple(name for name, declaration in declared_members(struct).items() if declaration["preset"])
