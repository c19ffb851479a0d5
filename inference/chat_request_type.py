"""The Chat Completions request body, typed once (msgspec): every member the /chat/completions ingress knows, with
its member-table row (inference.members.CHAT) and its OpenAPI schema (inference.openapi_wire). Members declared
`shared` have a Responses member's name, type and meaning and are checked by its rule; the others are translated
by inference.ingress.chat_request."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

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
    USAGE,
)
from inference.responses_request import member, one_of, same
from inference.schema_parts import VERBOSITIES

MAX_STOP = 4


class ChatMessage(msgspec.Struct):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    refusal: str | None = None


class ChatStreamOptions(msgspec.Struct):
    include_usage: bool | None = None
    include_obfuscation: Annotated[bool, Meta(description="Only false: chunks are never padded")] | None = None


class ChatRequest(msgspec.Struct):
    """An OpenAI Chat Completions request; `model` (or `models`) is required too. Other members go as sent to
    openai-chat upstreams (a 400 naming them when translated)."""

    model: member(same("model"), HONOURED, "the catalog slug; `@preset/<slug>` applies a preset", shared=True) = None
    models: member(same("models"), GATEWAY, MODELS, shared=True) = None
    messages: member(
        Annotated[list[ChatMessage], Meta(min_length=1)],
        HONOURED,
        "roles system, developer, user, assistant, tool (see Request members)",
    ) = None
    tools: member(
        list[dict[str, Any]] | None, HONOURED, "function tools; `service:` server tools run by the gateway"
    ) = None
    tool_choice: member(
        str | dict[str, Any] | None, HONOURED, "auto, none, required, a function, a `service:` server tool"
    ) = None
    parallel_tool_calls: member(same("parallel_tool_calls"), HONOURED, shared=True) = None
    response_format: member(dict[str, Any] | None, HONOURED, "text, json_object, json_schema → `text.format`") = None
    verbosity: member(one_of(VERBOSITIES) | None, HONOURED, "→ `text.verbosity` (low, high: OpenAI endpoints only)") = (
        None
    )
    max_completion_tokens: member(Annotated[int, Meta(ge=1)] | None, HONOURED, "→ `max_output_tokens`") = None
    max_tokens: member(
        Annotated[int, Meta(ge=1)] | None, HONOURED, "→ `max_output_tokens`; both given and different → 400"
    ) = None
    reasoning: member(
        dict[str, Any] | None, HONOURED, "{effort, max_tokens, enabled, summary}; `exclude: true` → 400"
    ) = None
    reasoning_effort: member(str | None, HONOURED, "→ `reasoning.effort`") = None
    include_reasoning: member(
        bool | None, PARTLY, "`true` = `reasoning: {}` (reasoning on, returned); `false` → 400"
    ) = None
    temperature: member(same("temperature"), ROUTER, f"{TEMPERATURE}; {SAMPLING}", shared=True) = None
    top_p: member(same("top_p"), ROUTER, f"0..1; {SAMPLING}", shared=True) = None
    top_k: member(same("top_k"), ROUTER, f"integer ≥ 0; {SAMPLING}", shared=True) = None
    min_p: member(same("min_p"), ROUTER, f"0..1; {SAMPLING}", shared=True) = None
    top_a: member(same("top_a"), ROUTER, f"0..1; {SAMPLING}", shared=True) = None
    frequency_penalty: member(same("frequency_penalty"), ROUTER, f"-2..2; {SAMPLING}", shared=True) = None
    presence_penalty: member(same("presence_penalty"), ROUTER, f"-2..2; {SAMPLING}", shared=True) = None
    repetition_penalty: member(same("repetition_penalty"), ROUTER, f"0..2; {SAMPLING}", shared=True) = None
    seed: member(int | None, ROUTER, f"integer; {SAMPLING}") = None
    logit_bias: member(dict[str, float] | None, ROUTER, f"token → -100..100; {SAMPLING}") = None
    stop: member(
        str | Annotated[list[str], Meta(max_length=MAX_STOP)] | None,
        ROUTER,
        f"a string or ≤ 4 strings (Anthropic: `stop_sequences`); {SAMPLING}",
    ) = None
    cache_control: member(same("cache_control"), ROUTER, CACHE, shared=True) = None
    n: member(Annotated[int, Meta(ge=1, le=1)] | None, PARTLY, "only 1: one choice per request") = None
    logprobs: member(
        bool | None,
        ROUTER,
        f"with `top_logprobs` 0..20: {SAMPLING}; `choice.logprobs` in JSON answers (a stream → 400); Anthropic "
        "endpoints skipped (none left → 400 `top_logprobs`)",
    ) = None
    top_logprobs: member(
        Annotated[int, Meta(ge=0, le=20)] | None, ROUTER, "0..20, needs `logprobs: true`; as `logprobs`"
    ) = None
    store: member(bool | None, PARTLY, "only false: the gateway stores no completions") = None
    stream: member(same("stream"), HONOURED, "`data:` chunks ending with `[DONE]`", shared=True) = None
    stream_options: member(
        ChatStreamOptions | None, PARTLY, "`include_usage`; `include_obfuscation: true` → 400 (chunks are never padded)"
    ) = None
    user: member(same("user"), HONOURED, "hashed before it reaches a provider", shared=True) = None
    safety_identifier: member(
        same("safety_identifier"), HONOURED, "hashed before it reaches a provider", shared=True
    ) = None
    metadata: member(same("metadata"), GATEWAY, "kept for accounting and observability", shared=True) = None
    prompt_cache_key: member(same("prompt_cache_key"), HONOURED, CACHE_KEY, shared=True) = None
    service_tier: member(same("service_tier"), HONOURED, TIER, shared=True) = None
    modalities: member(
        same("modalities"), HONOURED, "with `image`: only `openai-chat` endpoints of image models (400 otherwise)"
    ) = None
    image_config: member(same("image_config"), HONOURED, "needs `modalities` with `image`") = None
    max_tool_calls: member(same("max_tool_calls"), GATEWAY, "bound of the server-tool loop", shared=True) = None
    stop_server_tools_when: member(
        same("stop_server_tools_when"), GATEWAY, "bound of the server-tool loop", shared=True
    ) = None
    provider: member(same("provider"), GATEWAY, ROUTING, shared=True) = None
    route: member(same("route"), GATEWAY, ROUTING, shared=True) = None
    session_id: member(same("session_id"), GATEWAY, "sticky routing, observability", shared=True) = None
    trace: member(same("trace"), GATEWAY, "observability", shared=True) = None
    plugins: member(same("plugins"), GATEWAY, "docs/plugins.md", shared=True) = None
    transforms: member(same("transforms"), GATEWAY, TRANSFORMS, shared=True) = None
    usage: member(same("usage"), GATEWAY, USAGE) = None
    debug: member(
        same("debug"),
        GATEWAY,
        "`{echo_upstream_body}`: the upstream body, in the first chunk of a stream or the JSON answer",
        shared=True,
    ) = None


REFUSED_MEMBERS = {  # members of other formats or features the gateway does not offer: a 400 with the reason
    "functions": "deprecated; use tools and tool_choice",
    "function_call": "deprecated; use tools and tool_choice",
    "audio": "the gateway does not offer audio output",
    "prediction": "the gateway does not offer predicted outputs",
    "web_search_options": "the gateway does not offer this option; use the service:web_search tool",
    "speed": SPEED_REFUSED,
}
