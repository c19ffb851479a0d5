"""The Anthropic Messages request body, typed once (msgspec): every member the /messages ingress knows, with its
member-table row (inference.members.MESSAGES), its OpenAPI schema (inference.openapi_wire) and its validation:
inference.ingress.messages_request converts each body into `MessagesRequest` (msgspec, strict) before
translating it. A member it shares with /responses is declared by `responses_member`: its type, handling, note
and description are the Responses member's, defined once in inference.responses_request (null is taken as
absent on this format); the `shared` ones are copied as sent and explained by the Responses rule
(`temperature` is this format's own: Anthropic's range). A member's `check` gives the 400 when the type refuses
the body. The structured members (`system`, `messages`, `tools`, `tool_choice`, `thinking`, `output_config`,
`output_format`, `metadata`, `context_management`) are typed as far as their translation needs; the translation
checks the rest and explains them (inference.ingress.messages_request)."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from gateway_project.api.errors import validation_error
from inference.member_kinds import GATEWAY, HONOURED, PARTLY, ROUTER, SAMPLING
from inference.responses_request import LOOP_BOUND, member, responses_member
from inference.responses_request_parts import Identifier

NonEmpty = Annotated[str, Meta(min_length=1)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# The 400 of a member whose rule is more than its type (the others' rules are generated from their types, with
# the messages they declare: inference.schema.rule_of_type).


def check_stop_sequences(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array")
    if not all(isinstance(s, str) and s for s in value):
        raise validation_error(name, "must be an array of non-empty strings")


class MessagesMessage(msgspec.Struct, gc=False):
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class MessagesMetadata(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    user_id: Identifier = None


class ContextManagement(msgspec.Struct, gc=False):
    edits: list[Any] | None = None


CONTEXT_EDITS = (
    "edits: forwarded to Anthropic-format endpoints; clear_thinking / clear_tool_uses applied by the gateway "
    "for the others, `applied_edits` in the answer (docs/agents.md); other edit types → 400"
)


class MessagesRequest(msgspec.Struct, gc=False):
    """An Anthropic Messages request; `model` (or `models`) is required too. Other members go as sent to
    anthropic-messages upstreams (a 400 naming them when translated)."""

    model: responses_member("model", nullable=True, preset=True) = None
    models: responses_member("models", nullable=True) = None
    max_tokens: member(
        Annotated[int, Meta(ge=1, extra={"error": "is required and must be an integer of at least 1"})],
        HONOURED,
        "required; → `max_output_tokens`",
        preset=True,
    ) = None
    messages: member(
        Annotated[list[MessagesMessage], Meta(min_length=1)],
        HONOURED,
        "user / assistant turns of blocks, mid-conversation system messages (see Request members)",
    ) = None
    system: member(str | list[dict[str, Any]] | None, HONOURED, "a string or text blocks") = None
    tools: member(
        list[dict[str, Any]] | None,
        HONOURED,
        "custom tools; web_search, web_fetch, tool_search_tool_bm25 run by the gateway",
        preset=True,
    ) = None
    tool_choice: member(
        dict[str, Any] | None, HONOURED, "auto, any, tool, none; `disable_parallel_tool_use`", preset=True
    ) = None
    thinking: member(dict[str, Any] | None, HONOURED, "enabled {budget_tokens}, adaptive, disabled") = None
    output_config: member(dict[str, Any] | None, HONOURED, "effort, format", preset=True) = None
    output_format: member(dict[str, Any] | None, HONOURED, "json_schema → `text.format`") = None
    stop_sequences: member(list[NonEmpty] | None, ROUTER, f"→ `stop`; {SAMPLING}", check=check_stop_sequences) = None
    temperature: member(
        Annotated[float, Meta(ge=0, le=1)] | None, ROUTER, f"0..1; {SAMPLING}", shared=True, preset=True
    ) = None
    top_p: responses_member("top_p", nullable=True, preset=True) = None
    top_k: responses_member("top_k", nullable=True, preset=True) = None
    cache_control: responses_member("cache_control", nullable=True, shared=False, preset=True) = None
    metadata: member(MessagesMetadata | None, PARTLY, "`user_id` only (hashed before it reaches a provider)") = None
    service_tier: member(
        Annotated[Literal["auto"], Meta(extra={"error": "is not supported: only auto"})] | None, PARTLY, "only auto"
    ) = None
    speed: member(
        Annotated[Literal["standard", "fast"], Meta(extra={"error": "must be standard or fast"})] | None,
        HONOURED,
        "fast → priority capacity",
        preset=True,
    ) = None
    stream: member(bool | None, HONOURED, "Messages events") = None
    max_tool_calls: responses_member("max_tool_calls", LOOP_BOUND, handling=GATEWAY, nullable=True) = None
    stop_server_tools_when: responses_member("stop_server_tools_when", nullable=True, preset=True) = None
    provider: responses_member("provider", nullable=True, preset=True) = None
    route: responses_member("route", nullable=True, preset=True) = None
    session_id: responses_member("session_id", nullable=True) = None
    trace: responses_member("trace", nullable=True) = None
    plugins: responses_member("plugins", nullable=True, preset=True) = None
    context_management: member(
        ContextManagement | None,
        HONOURED,
        CONTEXT_EDITS,
    ) = None


REFUSED_MEMBERS = {  # a 400 with the reason
    "mcp_servers": "the gateway does not connect to MCP servers for a request",
    "container": "the gateway runs no code-execution containers",
    "inference_geo": "use provider preferences (`provider.only`) and the key's region instead",
    "diagnostics": "the gateway does not offer this option",
    "user_profile_id": "the gateway does not offer this option",
    "workspace_id": "workspaces are the gateway's own (the key decides)",
}
