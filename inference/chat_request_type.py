"""The Chat Completions request body, typed once (msgspec): every member the /chat/completions ingress knows, with
its member-table row (inference.members.CHAT), its OpenAPI schema (inference.openapi_wire) and its validation:
inference.ingress.chat_request converts each body into `ChatRequest` (msgspec, strict) before translating it.
A member it shares with /responses is declared by `responses_member`: its type, handling, note and description
are the Responses member's, defined once in inference.responses_request (this format states only what
differs); the `shared` ones are copied as sent and explained by the Responses rule. A member's `check` gives
the 400 (the member named, the API's own message) when the type refuses the body. The structured members
(`messages`, `tools`, `tool_choice`, `response_format`, `reasoning`) are typed as far as their translation
needs; the translation checks the rest and explains them (inference.ingress.chat_request)."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from gateway_project.api.errors import validation_error
from inference.member_kinds import (
    GATEWAY,
    HONOURED,
    PARTLY,
    ROUTER,
    SAMPLING,
    SPEED_REFUSED,
    USAGE,
)
from inference.responses_request import LOOP_BOUND, member, one_of, responses_member
from inference.schema_parts import REASONING_EFFORTS, VERBOSITIES

MAX_STOP = 4
NonEmpty = Annotated[str, Meta(min_length=1)]
AtLeastOne = Annotated[int, Meta(ge=1, extra={"error": "must be an integer of at least 1"})]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def refusal(name: str, why: str):
    return validation_error(name, f"is not supported: {why}")


# The 400 of a member whose rule is more than its type (the others' rules are generated from their types, with
# the messages they declare: inference.schema.rule_of_type).


def check_n(name: str, value: Any) -> None:
    if value is not None and (not _is_int(value) or value < 1):
        raise validation_error(name, "must be an integer of at least 1")
    if value not in (None, 1):
        raise refusal(name, "one choice per request; send n requests for n choices")


def check_boolean(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")


def check_stop(name: str, value: Any) -> None:
    if value is None:
        return
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise validation_error(name, "must be a non-empty string or an array of non-empty strings")
    if len(stops) > MAX_STOP:
        raise validation_error(name, f"must have at most {MAX_STOP} sequences")


def check_store(name: str, value: Any) -> None:
    if value is not None and value is not False:
        raise refusal(name, "the gateway stores no completions")


def check_stream_options(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object")
    unknown = set(value) - {"include_usage", "include_obfuscation"}
    if unknown:
        raise validation_error(f"{name}.{sorted(unknown)[0]}", "is not a member of stream_options")
    for key in ("include_usage", "include_obfuscation"):
        check_boolean(f"{name}.{key}", value.get(key))


class ChatMessage(msgspec.Struct, gc=False):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | UnsetType = UNSET
    refusal: str | None = None


class ChatStreamOptions(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    include_usage: bool | None = None
    include_obfuscation: Annotated[bool, Meta(description="Only false: chunks are never padded")] | None = None


class ChatRequest(msgspec.Struct, gc=False):
    """An OpenAI Chat Completions request; `model` (or `models`) is required too. Other members go as sent to
    openai-chat upstreams (a 400 naming them when translated)."""

    model: responses_member("model", preset=True) = None
    models: responses_member("models", preset=True) = None
    messages: member(
        Annotated[list[ChatMessage], Meta(min_length=1)],
        HONOURED,
        "roles system, developer, user, assistant, tool (see Request members)",
    ) = None
    tools: member(
        list[dict[str, Any]] | None, HONOURED, "function tools; `service:` server tools run by the gateway", preset=True
    ) = None
    tool_choice: member(
        str | dict[str, Any] | None, HONOURED, "auto, none, required, a function, a `service:` server tool", preset=True
    ) = None
    parallel_tool_calls: responses_member("parallel_tool_calls", preset=True) = None
    response_format: member(
        dict[str, Any] | None, HONOURED, "text, json_object, json_schema → `text.format`", preset=True
    ) = None
    verbosity: member(
        Annotated[one_of(VERBOSITIES), Meta(extra={"error": "must be one of low, medium, high"})] | None,
        HONOURED,
        "→ `text.verbosity` (low, high: OpenAI endpoints only)",
        preset=True,
    ) = None
    max_completion_tokens: member(AtLeastOne | None, HONOURED, "→ `max_output_tokens`", preset=True) = None
    max_tokens: member(
        AtLeastOne | None,
        HONOURED,
        "→ `max_output_tokens`; both given and different → 400",
        preset=True,
    ) = None
    reasoning: member(
        dict[str, Any] | None, HONOURED, "{effort, max_tokens, enabled, summary}; `exclude: true` → 400", preset=True
    ) = None
    reasoning_effort: member(one_of(REASONING_EFFORTS) | None, HONOURED, "→ `reasoning.effort`", preset=True) = None
    include_reasoning: member(
        bool | None, PARTLY, "`true` = `reasoning: {}` (reasoning on, returned); `false` → 400"
    ) = None
    temperature: responses_member("temperature", preset=True) = None
    top_p: responses_member("top_p", preset=True) = None
    top_k: responses_member("top_k", preset=True) = None
    min_p: responses_member("min_p") = None
    top_a: responses_member("top_a") = None
    frequency_penalty: responses_member("frequency_penalty", preset=True) = None
    presence_penalty: responses_member("presence_penalty", preset=True) = None
    repetition_penalty: responses_member("repetition_penalty") = None
    seed: member(
        Annotated[int, Meta(extra={"error": "must be an integer"})] | None, ROUTER, f"integer; {SAMPLING}", preset=True
    ) = None
    logit_bias: member(
        dict[str, Annotated[float, Meta(ge=-100, le=100, extra={"error": "must be a number between -100 and 100"})]]
        | None,
        ROUTER,
        f"token → -100..100; {SAMPLING}",
        preset=True,
    ) = None
    stop: member(
        NonEmpty | Annotated[list[NonEmpty], Meta(max_length=MAX_STOP)] | None,
        ROUTER,
        f"a string or ≤ 4 strings (Anthropic: `stop_sequences`); {SAMPLING}",
        check=check_stop,
        preset=True,
    ) = None
    cache_control: responses_member("cache_control") = None
    n: member(Annotated[int, Meta(ge=1, le=1)] | None, PARTLY, "only 1: one choice per request", check=check_n) = None
    logprobs: member(
        bool | None,
        ROUTER,
        f"with `top_logprobs` 0..20: {SAMPLING}; `choice.logprobs` in JSON answers (a stream → 400); Anthropic "
        "endpoints skipped (none left → 400 `top_logprobs`)",
    ) = None
    top_logprobs: member(
        Annotated[int, Meta(ge=0, le=20, extra={"error": "must be an integer between 0 and 20"})] | None,
        ROUTER,
        "0..20, needs `logprobs: true`; as `logprobs`",
    ) = None
    store: member(bool | None, PARTLY, "only false: the gateway stores no completions", check=check_store) = None
    stream: responses_member("stream", "`data:` chunks ending with `[DONE]`") = None
    stream_options: member(
        ChatStreamOptions | None,
        PARTLY,
        "`include_usage`; `include_obfuscation: true` → 400 (chunks are never padded)",
        check=check_stream_options,
    ) = None
    user: responses_member("user") = None
    safety_identifier: responses_member("safety_identifier") = None
    metadata: responses_member("metadata") = None
    prompt_cache_key: responses_member("prompt_cache_key") = None
    service_tier: responses_member("service_tier", preset=True) = None
    modalities: responses_member("modalities", nullable=True, shared=False) = None
    image_config: responses_member("image_config", shared=False) = None
    max_tool_calls: responses_member("max_tool_calls", LOOP_BOUND, handling=GATEWAY) = None
    stop_server_tools_when: responses_member("stop_server_tools_when") = None
    provider: responses_member("provider", preset=True) = None
    route: responses_member("route", preset=True) = None
    session_id: responses_member("session_id") = None
    trace: responses_member("trace") = None
    plugins: responses_member("plugins", preset=True) = None
    transforms: responses_member("transforms") = None
    usage: responses_member("usage", USAGE, shared=False) = None
    debug: responses_member(
        "debug", "`{echo_upstream_body}`: the upstream body, in the first chunk of a stream or the JSON answer"
    ) = None


REFUSED_MEMBERS = {  # members of other formats or features the gateway does not offer: a 400 with the reason
    "functions": "deprecated; use tools and tool_choice",
    "function_call": "deprecated; use tools and tool_choice",
    "audio": "the gateway does not offer audio output",
    "prediction": "the gateway does not offer predicted outputs",
    "web_search_options": "the gateway does not offer this option; use the service:web_search tool",
    "speed": SPEED_REFUSED,
}
