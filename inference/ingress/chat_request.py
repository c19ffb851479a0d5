"""OpenAI Chat Completions request → the canonical (Responses) request body, pure.

`to_canonical(body)` validates every member of a Chat Completions body (a 400 naming the member, in the
client's own vocabulary) and returns the equivalent Responses body the pipeline runs on. The body is first
converted into its type, `inference.chat_request_type.ChatRequest` (msgspec, strict: types, enums, bounds and
lengths of every member, in C); a body the type refuses is explained member by member, in the order below, by
each member's rule (its `check`, its translation here, or the rule generated from its type with the message the
type declares), so the 400 names the member with the API's own message. What the type cannot state (the
content of messages, tools, `tool_choice`, `response_format`, `reasoning`, and the rules between members) is
checked here while translating:

- `messages`: system / developer → system / developer messages; user content parts text → input_text,
  image_url → input_image, input_audio → input_audio, file → input_file; assistant text → an assistant
  message, its `tool_calls` → function_call items; tool → function_call_output;
- `tools` (function, with `function.defer_loading`; server tools `{type: "service:...", parameters}` as on
  /responses) and `tool_choice` (also `{type: "service:..."}`), `parallel_tool_calls`, `max_tool_calls`,
  `stop_server_tools_when`, `plugins` (the server-tool loop: inference.ingress.chat_loop);
  `response_format` → `text.format`;
  `max_completion_tokens` / `max_tokens` → `max_output_tokens`; `reasoning` / `reasoning_effort` →
  `reasoning`; `verbosity` → `text.verbosity`; the sampling parameters (`stop`, `seed`, `logit_bias`,
  `min_p`, `top_a`, `repetition_penalty`, `top_k`, ...) and a top-level `cache_control` are carried as they
  are (each endpoint is sent those it supports: inference.router_parameters);
- gateway members (`models`, `provider`, `route`, `session_id`, `trace`, `metadata`, `user`, `transforms`,
  `debug`, ...) are checked with the Responses rules and kept; `usage.include` on a stream asks for the usage
  chunk.

`logprobs: true` (+ `top_logprobs`) → `top_logprobs`, a router parameter (JSON answers carry
`choice.logprobs`; a stream with it is refused). Refused: `n` other than 1, `store: true`, the `function`
role, and the members the table (inference.members.CHAT) refuses. A member the table does not list is carried
for an `openai-chat` upstream (inference.unknown_members).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference import schema, schema_parts
from inference.chat_request_type import ChatRequest
from inference.ingress.chat_messages import check_tool_names, message_items, refuse
from inference.ingress.common import declarations, explain_steps, require_list, require_object, typed
from inference.members import CHAT as MEMBERS
from inference.members import REFUSED
from inference.schema_router import fold_router_members
from inference.servertools.registry import is_server_tool
from inference.unknown_members import collect

# The members of the typed request (inference.chat_request_type): `shared` ones have a Responses
# member's name and meaning and are checked by its rule; the others are translated here.
_MEMBERS = declarations(ChatRequest)
_DECLARED, _TYPES, SHARED, HANDLED, SHARED_RULES = _MEMBERS


def _tools(tools: Any) -> list[dict[str, Any]]:
    out = []
    for index, tool in enumerate(require_list("tools", tools)):
        path = f"tools[{index}]"
        tool = require_object(path, tool)
        if is_server_tool(tool):  # a gateway server tool, in the Responses shape: {type: "service:...", parameters}
            out.append(tool)
            continue
        if tool.get("type") != "function":
            raise refuse(f"{path}.type", "only function tools and service: server tools are accepted")
        unknown = set(tool) - {"type", "function"}
        if unknown:
            raise validation_error(f"{path}.{sorted(unknown)[0]}", "is not a member of a tool")
        function = require_object(f"{path}.function", tool.get("function"))
        unknown = set(function) - {"name", "description", "parameters", "strict", "defer_loading"}
        if unknown:
            raise validation_error(f"{path}.function.{sorted(unknown)[0]}", "is not a member of a function tool")
        converted = {"type": "function", **{k: v for k, v in function.items() if v is not None}}
        out.append(converted)
    schema.CHECKERS["tools"]("tools", out)
    schema_parts.check_deferred_tools(out)
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise validation_error("tool_choice", "must be auto, none, required or {type: function, function}")
        return choice
    choice = require_object("tool_choice", choice)
    if is_server_tool(choice):  # OpenRouter's shape: the server tool named by its type
        if set(choice) != {"type"}:
            raise validation_error(f"tool_choice.{sorted(set(choice) - {'type'})[0]}", "is not a member")
        return {"type": choice["type"]}
    if choice.get("type") != "function":
        raise validation_error("tool_choice.type", "must be function or a service: server tool type")
    function = require_object("tool_choice.function", choice.get("function"))
    if not isinstance(function.get("name"), str) or not function["name"]:
        raise validation_error("tool_choice.function.name", "is required")
    return {"type": "function", "name": function["name"]}


def _response_format(value: Any) -> dict[str, Any]:
    value = require_object("response_format", value)
    kind = value.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind != "json_schema":
        raise validation_error("response_format.type", "must be one of text, json_object, json_schema")
    spec = require_object("response_format.json_schema", value.get("json_schema"))
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise validation_error("response_format.json_schema.name", "is required")
    if spec.get("schema") is not None and not isinstance(spec["schema"], dict):
        raise validation_error("response_format.json_schema.schema", "must be an object")
    fmt = {"type": "json_schema", "name": spec["name"], "schema": spec.get("schema") or {}}
    for key in ("description", "strict"):
        if spec.get(key) is not None:
            fmt[key] = spec[key]
    return fmt


def _reasoning_object(reasoning: Any) -> dict[str, Any]:
    reasoning = require_object("reasoning", reasoning)
    unknown = set(reasoning) - {"effort", "max_tokens", "enabled", "exclude", "summary"}
    if unknown:
        raise validation_error(f"reasoning.{sorted(unknown)[0]}", "is not a member of reasoning")
    if reasoning.get("exclude") not in (None, False):
        raise refuse("reasoning.exclude", "reasoning text is never returned in chat.completion answers")
    return {k: v for k, v in reasoning.items() if k != "exclude" and v is not None}


def _messages(messages: Any) -> list[dict[str, Any]]:
    messages = require_list("messages", messages)
    if not messages:
        raise validation_error("messages", "must contain at least one message")
    items = [item for index, message in enumerate(messages) for item in message_items(index, message)]
    check_tool_names(messages, items)
    return items


def _logprobs(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    """`logprobs: true` (with `top_logprobs` alternatives) → the canonical `top_logprobs`, a router parameter;
    the JSON answer's `choice.logprobs` carries them (a stream does not)."""
    top = request.top_logprobs
    if top is not None and not request.logprobs:
        raise validation_error("top_logprobs", "needs logprobs: true")
    if request.logprobs:
        if request.stream:
            raise refuse("logprobs", "token log-probabilities are returned in JSON answers only, not streamed")
        out["top_logprobs"] = top or 0


def _sampling(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    stop = body.get("stop")
    if stop:
        out["stop"] = [stop] if isinstance(stop, str) else stop
    if request.seed is not None:
        out["seed"] = body["seed"]
    if request.logit_bias:
        out["logit_bias"] = body["logit_bias"]


def _limits(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    first, second = request.max_completion_tokens, request.max_tokens
    if first is not None and second is not None and first != second:
        raise validation_error("max_tokens", "differs from max_completion_tokens; send one of them")
    if first is not None or second is not None:
        out["max_output_tokens"] = first if first is not None else second


def _include_reasoning(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    if request.include_reasoning is False:  # the public router API's older switch: true = reasoning: {}
        raise refuse("include_reasoning", "false asks to hide the reasoning, which chat.completion answers return")


def _reasoning(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    reasoning = body.get("reasoning")
    effort = request.reasoning_effort
    if request.include_reasoning and reasoning is None:
        reasoning = {"enabled": True}
    if reasoning is None and effort is None:
        return
    merged = _reasoning_object(reasoning) if reasoning is not None else {}
    if effort is not None:
        if merged.get("effort") not in (None, effort):
            raise validation_error("reasoning_effort", "differs from reasoning.effort; send one of them")
        merged["effort"] = effort
    schema.CHECKERS["reasoning"]("reasoning", merged)
    out["reasoning"] = merged


def _text(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    text: dict[str, Any] = {}
    if body.get("response_format") is not None:
        text["format"] = _response_format(body["response_format"])
    if request.verbosity is not None:
        text["verbosity"] = request.verbosity
    if text:
        out["text"] = text


def _stream_options(request: Any, body: dict[str, Any], out: dict[str, Any]) -> None:
    options = body.get("stream_options")
    if options is None:
        return
    if options.get("include_obfuscation"):
        raise refuse("stream_options.include_obfuscation", "chunks are never padded")
    if not request.stream:
        raise validation_error("stream_options", "is only allowed when stream is true")
    out["stream_options"] = {"include_usage": bool(options.get("include_usage"))}


# A body the type refuses is explained in the translation's order: each member by its declared `check`, its
# translation here (the structured members) or its Responses rule, and the rules between members (the
# functions, run on the body's values) where the translation applies them.
_TRANSLATIONS = {
    "messages": _messages,
    "tools": _tools,
    "tool_choice": _tool_choice,
    "reasoning": _reasoning_object,
    "response_format": _response_format,
}
_ORDER = (
    "store", "modalities", "image_config", "messages", "tools", "tool_choice", "n", "logprobs", "top_logprobs",
    _logprobs, "stop", "seed", "logit_bias", "max_completion_tokens", "max_tokens", _limits, "include_reasoning",
    _include_reasoning, "reasoning", "reasoning_effort", _reasoning, "response_format", "verbosity",
    "stream_options", _stream_options, "usage",
)  # fmt: skip


_EXPLAIN = explain_steps(_ORDER, _MEMBERS, translations=_TRANSLATIONS)
_FIELDS = tuple(_DECLARED)


def _explain(body: dict[str, Any]) -> None:
    """The 400 of a body the type refuses: the first member, in the translation's order, whose rule refuses it."""
    for name in SHARED:
        if name in body:
            schema.CHECKERS[name](name, body[name])
    _require_model(body)
    values = SimpleNamespace(**{name: body.get(name) for name in _FIELDS})  # checked before a rule reads them
    for step in _EXPLAIN:
        if callable(step):
            step(values, body, {})
            continue
        name, check = step
        value = body.get(name)
        if value is not None or name == "messages":
            check(name, value)


def _require_model(body: dict[str, Any]) -> None:
    if not body.get("model") and not body.get("models"):
        raise validation_error("model", "is required")


def to_canonical(body: Any) -> dict[str, Any]:
    """The Responses body of a Chat Completions body (400 naming the first wrong member). Members the member
    table does not list are carried for a same-format upstream (inference.unknown_members)."""
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    out: dict[str, Any] = {}
    unknown = False
    for name in body:
        member = MEMBERS.get(name)
        if member is None:
            unknown = True
        elif member.handling == REFUSED:
            raise refuse(name, member.note)
    if unknown:
        collect(body, out, MEMBERS)
    request = typed(body, ChatRequest, _explain)
    for name in SHARED_RULES:
        if name in body:
            schema.RULES[name](name, body[name])
    for name in SHARED:
        value = body.get(name)
        if value is not None:
            out[name] = value
    _require_model(out)
    if request.store:
        raise refuse("store", "the gateway stores no completions")
    for name in ("modalities", "image_config"):  # image output: routing sends it to image models (or 400)
        if body.get(name) is not None:
            out[name] = body[name]
    out["input"] = _messages(body.get("messages"))
    if request.tools is not None:
        out["tools"] = _tools(body["tools"])
    if request.tool_choice is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    for translate in (_logprobs, _sampling, _limits, _include_reasoning, _reasoning, _text, _stream_options):
        translate(request, body, out)
    if request.usage is not None and request.usage.include and request.stream:
        out["stream_options"] = {"include_usage": True}  # `usage.include` on a stream asks for the usage chunk
    return fold_router_members(out)
