"""Anthropic Messages request → the canonical (Responses) request body, pure.

`to_canonical(body, betas)` validates every member of a Messages body (a 400 naming it) and returns the
equivalent Responses body. The body is first converted into its type, `inference.messages_request_type.
MessagesRequest` (msgspec, strict); a body the type refuses is explained member by member, in the order below,
by each member's rule (its `check`, its translation here, or the rule generated from its type with the message
the type declares). What the type cannot state (blocks, tools, thinking, output formats, context edits, the
rules between members) is checked here while translating:

- `system` (string or text blocks, `cache_control` kept) → system messages first in `input`;
- `messages`: text blocks → input_text (user) / output_text (assistant); image blocks (base64, url, file
  sources) → input_image; document blocks (base64 / url PDFs, plain text) → input_file / input_text;
  `tool_use` → function_call items (input as JSON arguments); `tool_result` → function_call_output (text
  content; `is_error: true` prefixes the output with "Error: "); `cache_control` on blocks kept;
  `thinking` / `redacted_thinking` blocks of earlier turns → reasoning items carrying the signature (sent
  back to Anthropic-format providers, as tool-use turns require; not sent to other providers);
- `tools` (custom tools with `input_schema`, `defer_loading` kept) → function tools; server tools, either
  the gateway's `{type: "service:...", parameters}` or Anthropic's `web_search_*` / `web_fetch_*` /
  `tool_search_tool_bm25*` types (with `name` only) → `service:web_search` / `service:web_fetch` /
  `service:tool_search`, run by the gateway's server-tool loop (inference.ingress.messages_loop); with
  `plugins`, `max_tool_calls` and `stop_server_tools_when` as on /responses; `tool_choice` auto / any / tool / none
  (and `disable_parallel_tool_use`) → `tool_choice` / `parallel_tool_calls`;
- `system`-role messages inside `messages` → developer messages at the same place (messages_blocks);
- `max_tokens` → `max_output_tokens`; `thinking` {enabled, budget_tokens} → `reasoning` (effort from the
  budget, the budget itself as `reasoning.max_tokens`), {adaptive} → reasoning enabled (effort from
  `output_config.effort`); `thinking` and `output_config` are also kept as sent (`anthropic_thinking`,
  `anthropic_output_config`) for Anthropic-format providers; `context_management` is checked (inference.ingress.
  context_edits) and kept as `anthropic_context_management`: forwarded to Anthropic-format providers, applied by
  the gateway for the others (inference.handler); `speed: fast` → `service_tier: fast`; a top-level
  `cache_control` is kept;
  `output_config` / `output_format` json_schema → `text.format`; `stop_sequences` → `stop`; `temperature`,
  `top_p`, `top_k`; `metadata.user_id` → `user`;
- the `anthropic-beta` header's features are carried (as `anthropic_beta`) to Anthropic-format providers.

Refused: Anthropic's other server tools (code execution, bash, text editor, ...) and the options of its web
search / fetch tools (`allowed_domains`, `user_location`, ...; `max_uses` becomes `max_tool_calls` when the
tool is the only server tool), `mcp_servers`, `container`,
context edit types the gateway cannot apply, `inference_geo`, `diagnostics`, `user_profile_id`, `workspace_id`,
`service_tier` other than auto, `thinking.display: omitted`, metadata members other than `user_id` (the member
table: inference.members.MESSAGES). A member the table does not list is carried for an `anthropic-messages` upstream
(inference.unknown_members).
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference import schema, schema_parts
from inference.ingress import context_edits
from inference.ingress.common import declarations, explain_steps, is_int, require_list, require_object, typed
from inference.ingress.messages_blocks import cache, message_items, system_items
from inference.members import MESSAGES as MEMBERS
from inference.members import REFUSED
from inference.messages_request_type import MessagesRequest
from inference.reasoning_request import effort_of_budget
from inference.servertools.registry import is_server_tool
from inference.unknown_members import collect

# The members of the typed request (inference.messages_request_type): `shared` ones have a Responses
# member's name and meaning and are checked by its rule; the others are translated here.
_MEMBERS = declarations(MessagesRequest)
_DECLARED, _TYPES, SHARED, HANDLED, SHARED_RULES = _MEMBERS

ANTHROPIC_TEMPERATURE = schema.number_between(0, 1)


def _thinking(value: Any, max_tokens: int) -> dict[str, Any] | None:
    thinking = require_object("thinking", value)
    kind = thinking.get("type")
    if kind == "disabled":
        return {"enabled": False}
    if thinking.get("display") not in (None, "summarized"):
        raise validation_error("thinking.display", "is not supported: only summarized")
    if kind == "adaptive":
        return {"enabled": True}
    if kind != "enabled":
        raise validation_error("thinking.type", "must be enabled, adaptive or disabled")
    budget = thinking.get("budget_tokens")
    if not is_int(budget) or budget < 1024:
        raise validation_error("thinking.budget_tokens", "must be an integer of at least 1024")
    if budget >= max_tokens:
        raise validation_error("thinking.budget_tokens", "must be less than max_tokens")
    return {"enabled": True, "effort": effort_of_budget(budget), "max_tokens": budget}


NATIVE_SERVER_TOOLS = (  # Anthropic's server tool types → the gateway's (run by the gateway, not the provider)
    ("web_search_", "web_search", "service:web_search"),
    ("web_fetch_", "web_fetch", "service:web_fetch"),
    ("tool_search_tool_bm25", "tool_search_tool_bm25", "service:tool_search"),
)


def _server_tool(path: str, tool: dict[str, Any]) -> dict[str, Any] | None:
    """A server tool: the gateway's `service:` shape as it is, or Anthropic's own type (`type`, `name` and
    `max_uses` (see `_max_uses`): its other options, such as allowed_domains, are refused by name). None for a custom
    tool."""
    kind = tool.get("type")
    if is_server_tool(tool):
        return tool
    if not isinstance(kind, str):
        return None
    for prefix, name, gateway_kind in NATIVE_SERVER_TOOLS:
        if kind.startswith(prefix):
            if tool.get("name") != name:
                raise validation_error(f"{path}.name", f"must be {name} for {kind}")
            unknown = set(tool) - {"type", "name", "max_uses"}
            if unknown:
                raise validation_error(f"{path}.{sorted(unknown)[0]}", f"is not supported by the gateway's {name}")
            return {"type": gateway_kind}
    return None


CUSTOM_TOOL_KEYS = frozenset(
    {"type", "name", "description", "input_schema", "cache_control", "strict", "defer_loading"}
)


def _max_uses(out: dict[str, Any], limits: list[tuple[str, Any]]) -> None:
    """Anthropic's `max_uses` of a native server tool → `max_tool_calls` (the loop's bound on server-tool calls),
    when that tool is the request's only server tool (the bound is then the same)."""
    path, uses = limits[0]
    if not is_int(uses) or uses < 1:
        raise validation_error(f"{path}.max_uses", "must be a positive integer")
    if len(limits) > 1 or sum(1 for tool in out["tools"] if is_server_tool(tool)) > 1:
        raise validation_error(f"{path}.max_uses", "is supported when the request has one server tool only")
    out["max_tool_calls"] = min(uses, out.get("max_tool_calls") or uses)


def _tools(value: Any, limits: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    tools = []
    for index, tool in enumerate(require_list("tools", value)):
        path = f"tools[{index}]"
        tool = require_object(path, tool)
        server = _server_tool(path, tool)
        if server is not None:
            if server is not tool and "max_uses" in tool:
                limits.append((path, tool["max_uses"]))
            tools.append(server)
            continue
        if tool.get("type") not in (None, "custom"):
            raise validation_error(
                f"{path}.type", "is not supported: use custom tools, web_search, web_fetch, tool_search_tool_bm25"
            )
        unknown = set(tool) - CUSTOM_TOOL_KEYS
        if unknown:
            raise validation_error(f"{path}.{sorted(unknown)[0]}", "is not a member of a custom tool")
        if not isinstance(tool.get("input_schema"), dict):
            raise validation_error(f"{path}.input_schema", "is required and must be a JSON schema object")
        converted = {"type": "function", "name": tool.get("name"), "parameters": tool["input_schema"]}
        for key in ("description", "strict", "defer_loading"):
            if tool.get(key) is not None:
                converted[key] = tool[key]
        tools.append(cache(path, tool, converted))
    schema.CHECKERS["tools"]("tools", tools)
    schema_parts.check_deferred_tools(tools)
    return tools


def _tool_choice(value: Any, out: dict[str, Any]) -> None:
    choice = require_object("tool_choice", value)
    kind = choice.get("type")
    mapped = {"auto": "auto", "any": "required", "none": "none"}
    if kind == "tool":
        if not isinstance(choice.get("name"), str) or not choice["name"]:
            raise validation_error("tool_choice.name", "is required when type is tool")
        out["tool_choice"] = {"type": "function", "name": choice["name"]}
    elif kind in mapped:
        out["tool_choice"] = mapped[kind]
    else:
        raise validation_error("tool_choice.type", "must be one of auto, any, tool, none")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise validation_error("tool_choice.disable_parallel_tool_use", "must be a boolean")
    if disable:
        out["parallel_tool_calls"] = False


def _json_format(name: str, value: Any) -> dict[str, Any]:
    fmt = require_object(name, value)
    if fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        raise validation_error(name, "must be {type: json_schema, schema: {...}}")
    return {"type": "json_schema", "name": "output", "schema": fmt["schema"], "strict": True}


def _output(body: dict[str, Any], out: dict[str, Any]) -> None:
    config = body.get("output_config")
    fmt = None
    if config is not None:
        config = require_object("output_config", config)
        unknown = set(config) - {"format", "effort"}
        if unknown:
            raise validation_error(f"output_config.{sorted(unknown)[0]}", "is not supported")
        if config.get("format") is not None:
            fmt = _json_format("output_config.format", config["format"])
        if config.get("effort") is not None:
            schema.CHECKERS["reasoning"]("output_config", {"effort": config["effort"]})
            out["reasoning"] = {**out.get("reasoning", {}), "effort": config["effort"]}
        out["anthropic_output_config"] = config  # Anthropic-format providers get it as sent
    if body.get("output_format") is not None:
        fmt = _json_format("output_format", body["output_format"])
    if fmt:
        out["text"] = {"format": fmt}


def _metadata(value: Any, out: dict[str, Any]) -> None:
    metadata = require_object("metadata", value)
    unknown = set(metadata) - {"user_id"}
    if unknown:
        raise validation_error(f"metadata.{sorted(unknown)[0]}", "is not supported: metadata takes user_id only")
    user = metadata.get("user_id")
    if user is not None:
        schema.CHECKERS["user"]("metadata.user_id", user)
        out["user"] = user


def _thinking_step(body: dict[str, Any]) -> None:
    if body.get("thinking") is not None:
        _thinking(body["thinking"], body["max_tokens"])


def _tools_step(body: dict[str, Any]) -> None:
    if body.get("tools") is not None:
        out = {"tools": None}
        limits: list[tuple[str, Any]] = []
        out["tools"] = _tools(body["tools"], limits)
        if limits:
            _max_uses(out, limits)


# A body the type refuses is explained in the translation's order: each member by its declared `check`, its
# translation here (the structured members) or its Responses rule, and the translations reading several
# members (the functions, run on the body).
_TRANSLATIONS = {
    "system": system_items,
    "messages": message_items,
    "tool_choice": lambda value: _tool_choice(value, {}),
    "metadata": lambda value: _metadata(value, {}),
    "context_management": context_edits.validate,
}
_ORDER = (
    "max_tokens", "stream", "system", "messages", "tools", _tools_step, "tool_choice", "thinking", _thinking_step,
    "output_config", "output_format", lambda body: _output(body, {}), "stop_sequences", "metadata", "service_tier",
    "speed", "cache_control", "context_management",
)  # fmt: skip
_ALWAYS = frozenset({"max_tokens", "messages"})  # required: checked when absent too


_AFTER = frozenset({"tools", "thinking", "output_config", "output_format"})  # explained by the function after each
_EXPLAIN = explain_steps(_ORDER, _MEMBERS, translations=_TRANSLATIONS, explained_after=_AFTER)


def _explain(body: dict[str, Any]) -> None:
    """The 400 of a body the type refuses: the first member, in the translation's order, whose rule refuses it."""
    for name in SHARED:
        if body.get(name) is not None:
            check = ANTHROPIC_TEMPERATURE if name == "temperature" else schema.CHECKERS[name]
            check(name, body[name])
    _require_model(body)
    for step in _EXPLAIN:
        if callable(step):
            step(body)
            continue
        name, check = step
        value = body.get(name)
        if check is not None and (value is not None or name in _ALWAYS):
            check(name, value)


def _require_model(body: dict[str, Any]) -> None:
    if not body.get("model") and not body.get("models"):
        raise validation_error("model", "is required")


def to_canonical(body: Any, betas: list[str] | None = None) -> dict[str, Any]:
    """The Responses body of a Messages body (400 naming the first wrong member)."""
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    out: dict[str, Any] = {}
    unknown = False
    for name in body:
        member = MEMBERS.get(name)
        if member is None:
            unknown = True
        elif member.handling == REFUSED:
            raise validation_error(name, f"is not supported: {member.note}")
    if unknown:  # carried for an anthropic-messages upstream (inference.unknown_members)
        collect(body, out, MEMBERS)
    request = typed(body, MessagesRequest, _explain)
    for name in SHARED_RULES:
        if body.get(name) is not None:
            schema.RULES[name](name, body[name])
    for name in SHARED:
        value = body.get(name)
        if value is not None:
            out[name] = value
    _require_model(out)
    max_tokens = request.max_tokens
    if max_tokens is None:
        schema.rule_of_type(_TYPES["max_tokens"])("max_tokens", None)  # required
    out["max_output_tokens"] = max_tokens
    if request.stream is not None:
        out["stream"] = request.stream
    out["input"] = system_items(body.get("system")) + message_items(body.get("messages"))
    if request.tools is not None:
        limits: list[tuple[str, Any]] = []
        out["tools"] = _tools(body["tools"], limits)
        if limits:
            _max_uses(out, limits)
    if request.tool_choice is not None:
        _tool_choice(body["tool_choice"], out)
    if request.thinking is not None:
        out["reasoning"] = _thinking(body["thinking"], max_tokens)
        out["anthropic_thinking"] = body["thinking"]  # Anthropic-format providers get it as sent
    _output(body, out)
    if request.stop_sequences:
        out["stop"] = body["stop_sequences"]
    if request.metadata is not None and request.metadata.user_id is not None:
        out["user"] = request.metadata.user_id
    if request.speed == "fast":
        out["service_tier"] = "fast"
    if request.cache_control is not None:
        out["cache_control"] = body["cache_control"]
    if request.context_management is not None:
        out["anthropic_context_management"] = context_edits.validate(body["context_management"])
    if betas:
        out["anthropic_beta"] = betas
    return out
