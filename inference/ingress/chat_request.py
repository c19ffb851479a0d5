"""OpenAI Chat Completions request → the canonical (Responses) request body, pure.

`to_canonical(body)` validates every member of a Chat Completions body (a 400 naming the member, in the
client's own vocabulary) and returns the equivalent Responses body the pipeline runs on:

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

from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference import schema, schema_parts
from inference.chat_request_type import MAX_STOP, ChatRequest
from inference.ingress.chat_messages import check_tool_names, message_items, refuse
from inference.ingress.common import effort_values, is_int, require_list, require_object
from inference.members import CHAT as MEMBERS
from inference.members import REFUSED
from inference.responses_request import declared_members
from inference.schema_router import fold_router_members
from inference.servertools.registry import is_server_tool
from inference.unknown_members import collect

# The members of the typed request (inference.chat_request_type): `shared` ones have a Responses
# member's name and meaning and are checked by its rule; the others are translated here.
_DECLARED = declared_members(ChatRequest)
SHARED = tuple(name for name, declaration in _DECLARED.items() if declaration["shared"])
HANDLED = frozenset(name for name, declaration in _DECLARED.items() if not declaration["shared"])


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


def _stop(value: Any) -> list[str] | None:
    if value is None:
        return None
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise validation_error("stop", "must be a non-empty string or an array of non-empty strings")
    if len(stops) > MAX_STOP:
        raise validation_error("stop", f"must have at most {MAX_STOP} sequences")
    return stops or None


def _sampling(body: dict[str, Any], out: dict[str, Any]) -> None:
    n = body.get("n")
    if n is not None and (not is_int(n) or n < 1):
        raise validation_error("n", "must be an integer of at least 1")
    if n not in (None, 1):
        raise refuse("n", "one choice per request; send n requests for n choices")
    _logprobs(body, out)
    stop = _stop(body.get("stop"))
    if stop:
        out["stop"] = stop
    seed = body.get("seed")
    if seed is not None:
        if not is_int(seed):
            raise validation_error("seed", "must be an integer")
        out["seed"] = seed
    bias = body.get("logit_bias")
    if bias is not None:
        bias = require_object("logit_bias", bias)
        for token, weight in bias.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not -100 <= weight <= 100:
                raise validation_error(f"logit_bias.{token}", "must be a number between -100 and 100")
        if bias:
            out["logit_bias"] = bias


def _logprobs(body: dict[str, Any], out: dict[str, Any]) -> None:
    """`logprobs: true` (with `top_logprobs` alternatives) → the canonical `top_logprobs`, a router parameter;
    the JSON answer's `choice.logprobs` carries them (a stream does not)."""
    logprobs, top = body.get("logprobs"), body.get("top_logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise validation_error("logprobs", "must be a boolean")
    if top is not None:
        if not is_int(top) or not 0 <= top <= 20:
            raise validation_error("top_logprobs", "must be an integer between 0 and 20")
        if not logprobs:
            raise validation_error("top_logprobs", "needs logprobs: true")
    if logprobs:
        if body.get("stream"):
            raise refuse("logprobs", "token log-probabilities are returned in JSON answers only, not streamed")
        out["top_logprobs"] = top or 0


def _limits(body: dict[str, Any], out: dict[str, Any]) -> None:
    values = {k: body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None}
    for name, value in values.items():
        if not is_int(value) or value < 1:
            raise validation_error(name, "must be an integer of at least 1")
    if len(values) == 2 and values["max_completion_tokens"] != values["max_tokens"]:
        raise validation_error("max_tokens", "differs from max_completion_tokens; send one of them")
    if values:
        out["max_output_tokens"] = next(iter(values.values()))


def _reasoning(body: dict[str, Any], out: dict[str, Any]) -> None:
    reasoning = body.get("reasoning")
    effort = body.get("reasoning_effort")
    include = body.get("include_reasoning")  # the public router API's older switch: true = reasoning: {}
    if include is not None:
        if not isinstance(include, bool):
            raise validation_error("include_reasoning", "must be a boolean")
        if not include:
            raise refuse("include_reasoning", "false asks to hide the reasoning, which chat.completion answers return")
        if reasoning is None:
            reasoning = {"enabled": True}
    if reasoning is None and effort is None:
        return
    merged: dict[str, Any] = {}
    if reasoning is not None:
        reasoning = require_object("reasoning", reasoning)
        unknown = set(reasoning) - {"effort", "max_tokens", "enabled", "exclude", "summary"}
        if unknown:
            raise validation_error(f"reasoning.{sorted(unknown)[0]}", "is not a member of reasoning")
        if reasoning.get("exclude") not in (None, False):
            raise refuse("reasoning.exclude", "reasoning text is never returned in chat.completion answers")
        merged = {k: v for k, v in reasoning.items() if k != "exclude" and v is not None}
    if effort is not None:
        if not isinstance(effort, str) or effort not in effort_values():
            raise validation_error("reasoning_effort", f"must be one of {', '.join(sorted(effort_values()))}")
        if merged.get("effort") not in (None, effort):
            raise validation_error("reasoning_effort", "differs from reasoning.effort; send one of them")
        merged["effort"] = effort
    schema.CHECKERS["reasoning"]("reasoning", merged)
    out["reasoning"] = merged


def _text(body: dict[str, Any], out: dict[str, Any]) -> None:
    text: dict[str, Any] = {}
    if body.get("response_format") is not None:
        text["format"] = _response_format(body["response_format"])
    if body.get("verbosity") is not None:
        if body["verbosity"] not in ("low", "medium", "high"):
            raise validation_error("verbosity", "must be one of low, medium, high")
        text["verbosity"] = body["verbosity"]
    if text:
        out["text"] = text


def _stream_options(body: dict[str, Any], out: dict[str, Any]) -> None:
    options = body.get("stream_options")
    if options is None:
        return
    options = require_object("stream_options", options)
    unknown = set(options) - {"include_usage", "include_obfuscation"}
    if unknown:
        raise validation_error(f"stream_options.{sorted(unknown)[0]}", "is not a member of stream_options")
    for key in ("include_usage", "include_obfuscation"):
        if options.get(key) is not None and not isinstance(options[key], bool):
            raise validation_error(f"stream_options.{key}", "must be a boolean")
    if options.get("include_obfuscation"):
        raise refuse("stream_options.include_obfuscation", "chunks are never padded")
    if not body.get("stream"):
        raise validation_error("stream_options", "is only allowed when stream is true")
    out["stream_options"] = {"include_usage": bool(options.get("include_usage"))}


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
    for name in SHARED:
        if name in body:
            schema.CHECKERS[name](name, body[name])
            if body[name] is not None:
                out[name] = body[name]
    if not out.get("model") and not out.get("models"):
        raise validation_error("model", "is required")
    if body.get("store") not in (None, False):
        raise refuse("store", "the gateway stores no completions")
    for name in ("modalities", "image_config"):  # image output: routing sends it to image models (or 400)
        if body.get(name) is not None:
            schema.CHECKERS[name](name, body[name])
            out[name] = body[name]
    messages = require_list("messages", body.get("messages"))
    if not messages:
        raise validation_error("messages", "must contain at least one message")
    out["input"] = [item for index, message in enumerate(messages) for item in message_items(index, message)]
    check_tool_names(messages, out["input"])
    if body.get("tools") is not None:
        out["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    _sampling(body, out)
    _limits(body, out)
    _reasoning(body, out)
    _text(body, out)
    _stream_options(body, out)
    _router_members(body, out)
    return fold_router_members(out)


def _router_members(body: dict[str, Any], out: dict[str, Any]) -> None:
    """`usage.include` on a stream asks for the usage chunk."""
    usage = body.get("usage")
    if usage is not None:
        schema.CHECKERS["usage"]("usage", usage)
        if usage.get("include") and body.get("stream"):
            out["stream_options"] = {"include_usage": True}
