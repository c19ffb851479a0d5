"""The Anthropic Messages request body, typed once (msgspec): every member the /messages ingress knows, with its
member-table row (inference.members.MESSAGES) and its OpenAPI schema (inference.openapi_wire). Members declared
`shared` have a Responses member's name and meaning and are checked by its rule (`temperature` with Anthropic's
range); the others are translated by inference.ingress.messages_request."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from inference.member_kinds import CACHE, GATEWAY, HONOURED, MODELS, PARTLY, ROUTER, ROUTING, SAMPLING
from inference.responses_request import member, same


class MessagesMessage(msgspec.Struct):
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class MessagesMetadata(msgspec.Struct):
    user_id: str | None = None


class ContextManagement(msgspec.Struct):
    edits: list[Any] | None = None


CONTEXT_EDITS = (
    "edits: forwarded to Anthropic-format endpoints; clear_thinking / clear_tool_uses applied by the gateway "
    "for the others, `applied_edits` in the answer (docs/agents.md); other edit types → 400"
)


class MessagesRequest(msgspec.Struct):
    """An Anthropic Messages request; `model` (or `models`) is required too. Other members go as sent to
    anthropic-messages upstreams (a 400 naming them when translated)."""

    model: member(same("model"), HONOURED, "the catalog slug; `@preset/<slug>` applies a preset", shared=True) = None
    models: member(same("models"), GATEWAY, MODELS, shared=True) = None
    max_tokens: member(Annotated[int, Meta(ge=1)], HONOURED, "required; → `max_output_tokens`") = None
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
    ) = None
    tool_choice: member(dict[str, Any] | None, HONOURED, "auto, any, tool, none; `disable_parallel_tool_use`") = None
    thinking: member(dict[str, Any] | None, HONOURED, "enabled {budget_tokens}, adaptive, disabled") = None
    output_config: member(dict[str, Any] | None, HONOURED, "effort, format") = None
    output_format: member(dict[str, Any] | None, HONOURED, "json_schema → `text.format`") = None
    stop_sequences: member(list[str] | None, ROUTER, f"→ `stop`; {SAMPLING}") = None
    temperature: member(Annotated[float, Meta(ge=0, le=1)] | None, ROUTER, f"0..1; {SAMPLING}", shared=True) = None
    top_p: member(same("top_p"), ROUTER, f"0..1; {SAMPLING}", shared=True) = None
    top_k: member(same("top_k"), ROUTER, f"integer ≥ 0; {SAMPLING}", shared=True) = None
    cache_control: member(same("cache_control"), ROUTER, CACHE) = None
    metadata: member(MessagesMetadata | None, PARTLY, "`user_id` only (hashed before it reaches a provider)") = None
    service_tier: member(Literal["auto"] | None, PARTLY, "only auto") = None
    speed: member(Literal["standard", "fast"] | None, HONOURED, "fast → priority capacity") = None
    stream: member(bool | None, HONOURED, "Messages events") = None
    max_tool_calls: member(same("max_tool_calls"), GATEWAY, "bound of the server-tool loop", shared=True) = None
    stop_server_tools_when: member(
        same("stop_server_tools_when"), GATEWAY, "bound of the server-tool loop", shared=True
    ) = None
    provider: member(same("provider"), GATEWAY, ROUTING, shared=True) = None
    route: member(same("route"), GATEWAY, ROUTING, shared=True) = None
    session_id: member(same("session_id"), GATEWAY, "sticky routing, observability", shared=True) = None
    trace: member(same("trace"), GATEWAY, "observability", shared=True) = None
    plugins: member(same("plugins"), GATEWAY, "docs/plugins.md", shared=True) = None
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
