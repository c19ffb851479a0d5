"""The `response-healing` plugin: the model's JSON output repaired and validated before the client gets it.

Plugin object: `{"id": "response-healing"}` (and `enabled`). It needs `text.format` of type `json_object` or
`json_schema` (anything else: 400 naming the plugin, since there would be nothing to heal) and a JSON answer
(`stream: true` is refused with 400: streamed text reaches the client before the whole output is known, and
healing it afterwards would show the client two different answers).

After the last turn the text of the answer is parsed; when it is not valid JSON it is repaired: a markdown code
block is unwrapped, text around the JSON is dropped, then the `json-repair` library fixes the syntax (missing
brackets, trailing commas, unquoted keys, single quotes, ...). `json_object` needs an object or an array;
`json_schema` is validated against `text.format.schema` with `jsonschema`. The answer's text becomes the healed
JSON. Output that cannot be repaired, or repaired JSON that does not match the schema, is a 502
(`error_type: response_healing_failed`, the model's text in `metadata.output`). What was done is one pipeline
stage (`service_metadata`, the Generation record). No fee: the model's tokens are billed as they were.
"""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal
from typing import Any

import json_repair
import jsonschema
import orjson

from gateway_project.api.errors import GatewayError, validation_error
from inference.plugins.registry import Plugin, register

JSON_FORMATS = ("json_object", "json_schema")
MAX_ERRORS = 5
OUTPUT_EXCERPT = 4000
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```", re.DOTALL)


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in ("id", "enabled"):
            raise validation_error(f"{name}.{key}", "unknown parameter (response-healing has no options)")


def _format(body: dict[str, Any]) -> dict[str, Any]:
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    return fmt if isinstance(fmt, dict) else {}


def _ready(ctx: Any, plugin: dict[str, Any], field: str) -> None:
    if _format(ctx.body).get("type") not in JSON_FORMATS:
        raise validation_error(
            field, "response-healing repairs JSON output: it needs text.format of type json_object or json_schema"
        )
    if ctx.stream:
        raise validation_error(
            field,
            "response-healing cannot be combined with stream: true (the text would reach the client before it "
            "could be repaired); send the request without streaming",
        )


def _parses(text: str) -> tuple[bool, Any]:
    try:
        return True, orjson.loads(text)
    except orjson.JSONDecodeError:
        return False, None


def heal(text: str) -> tuple[Any, list[str]] | None:
    """(the JSON value, the repairs made) of the model's text, or None when no JSON can be recovered."""
    ok, value = _parses(text)
    if ok:
        return value, []
    repairs: list[str] = []
    candidate = text
    fence = _FENCE.search(candidate)
    if fence:
        candidate = fence.group(1)
        repairs.append("unwrapped a markdown code block")
        ok, value = _parses(candidate)
        if ok:
            return value, repairs
    starts = [i for i in (candidate.find("{"), candidate.find("[")) if i >= 0]
    end = max(candidate.rfind("}"), candidate.rfind("]"))
    if starts and end > min(starts):
        inner = candidate[min(starts) : end + 1]
        ok, value = _parses(inner)
        if ok and inner != candidate.strip():
            return value, [*repairs, "removed text around the JSON"]
    value = json_repair.repair_json(candidate, return_objects=True)
    if value == "" or not isinstance(value, (dict, list)):
        return None
    return value, [*repairs, "repaired the JSON syntax"]


def _schema_errors(value: Any, schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    errors = sorted(validator_class(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:MAX_ERRORS]]


def _failure(message: str, text: str, errors: list[str] | None = None) -> GatewayError:
    metadata: dict[str, Any] = {"error_type": "response_healing_failed", "output": text[:OUTPUT_EXCERPT]}
    if errors:
        metadata["schema_errors"] = errors
    return GatewayError(502, message, metadata=metadata)


def _messages(state: Any) -> list[dict[str, Any]]:
    return [item for item in state.output if item.get("type") == "message"]


async def _finish(ctx: Any, plugin: dict[str, Any], state: Any) -> None:
    stage: dict[str, Any] = {"type": "plugin", "name": "response-healing"}
    messages = _messages(state)
    text = "".join(
        p.get("text", "") for m in messages for p in m.get("content") or () if p.get("type") == "output_text"
    )
    if not messages:  # the answer is function calls for the client: nothing to heal
        ctx.pipeline.append({**stage, "summary": "no text output to heal", "data": {"healed": False}})
        return
    fmt = _format(ctx.body)
    ok, value = _parses(text)
    # json-repair is pure Python (about 8 ms for 2 KB of broken JSON here): off the event loop
    healed = (value, []) if ok else await asyncio.to_thread(heal, text)
    if healed is None or (fmt.get("type") == "json_object" and not isinstance(healed[0], (dict, list))):
        ctx.pipeline.append({**stage, "summary": "output is not JSON and could not be repaired", "data": {}})
        raise _failure("response-healing: the model's output is not valid JSON and could not be repaired", text)
    value, repairs = healed
    errors = _schema_errors(value, fmt.get("schema")) if fmt.get("type") == "json_schema" else []
    data = {"healed": bool(repairs), "repairs": repairs, "schema_valid": not errors if fmt.get("schema") else None}
    if errors:
        ctx.pipeline.append({**stage, "summary": "output does not match text.format.schema", "data": data})
        raise _failure(
            "response-healing: the model's output does not match text.format.schema: " + "; ".join(errors),
            text,
            errors,
        )
    if repairs:
        _replace_text(state, messages, orjson.dumps(value).decode())
    summary = ("repaired: " + ", ".join(repairs)) if repairs else "output was valid JSON"
    ctx.pipeline.append({**stage, "summary": summary, "data": data})


def _replace_text(state: Any, messages: list[dict[str, Any]], healed: str) -> None:
    """The first message carries the healed JSON as its one output_text; the other messages are dropped."""
    first = messages[0]
    parts = [p for p in first.get("content") or () if p.get("type") == "output_text"]
    part = dict(parts[0]) if parts else {"type": "output_text", "annotations": []}
    part["text"] = healed
    part["annotations"] = []
    first["content"] = [part]
    state.output[:] = [item for item in state.output if item.get("type") != "message" or item is first]


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    return Decimal(0)  # acts on the answer only (`_finish`)


register(Plugin(id="response-healing", check=_check, run=_run, ready=_ready, finish=_finish))
