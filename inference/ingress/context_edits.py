"""Anthropic's context management (`context_management.edits` of a Messages request), pure: `validate` checks the
member (a 400 naming what is wrong, or an edit type the gateway cannot apply), `apply` runs the edits on a canonical
request body for a provider that does not take them (Anthropic-format providers get the member as it was sent and
edit the context themselves), and returns the edited body with the `applied_edits` to report, as Anthropic does.

- `clear_thinking_20251015`: keeps the reasoning (thinking) items of the last `keep.value` assistant turns that have
  any (`keep: {type: "thinking_turns", value: N}`, default 1; `keep: "all"` keeps every one); the others are removed.
  Reported as `{type, cleared_thinking_turns, cleared_input_tokens}`.
- `clear_tool_uses_20250919`: when the request's input passes `trigger` (`{type: "input_tokens", value}`, default
  100,000; or `{type: "tool_uses", value}`), the output of every tool call but the last `keep.value` (`{type:
  "tool_uses", value}`, default 3) is replaced by `PLACEHOLDER`, oldest first, skipping the tools named in
  `exclude_tools`; `clear_tool_inputs` (true, or a list of tool names) also empties those calls' arguments; with
  `clear_at_least` (`{type: "input_tokens", value}`) nothing is cleared unless that many tokens would be. Reported
  as `{type, cleared_tool_uses, cleared_input_tokens}`.

Token figures are the gateway's estimate: `ESTIMATE_BYTES_PER_TOKEN` bytes of JSON a token.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_project.api.errors import validation_error
from inference.ingress.common import is_int, require_list, require_object

CONTEXT_EDITS = "anthropic_context_management"  # the canonical body's member holding the validated edits
APPLIED_EDITS = "messages.applied_edits"  # ctx.extras: the edits the gateway applied, for the answer
CLEAR_THINKING = "clear_thinking_"
CLEAR_TOOL_USES = "clear_tool_uses_"
EDIT_TYPES = ("clear_thinking_20251015", "clear_tool_uses_20250919")
PLACEHOLDER = "[Tool result cleared to save context]"
ESTIMATE_BYTES_PER_TOKEN = 4
DEFAULT_TRIGGER = {"type": "input_tokens", "value": 100_000}
DEFAULT_KEEP_TOOL_USES = 3
ASSISTANT_SIDE = ("function_call", "reasoning")


def estimate_tokens(value: Any) -> int:
    return -(-len(orjson.dumps(value)) // ESTIMATE_BYTES_PER_TOKEN)


def _amount(path: str, value: Any, kinds: tuple[str, ...]) -> dict[str, Any]:
    amount = require_object(path, value)
    if amount.get("type") not in kinds:
        raise validation_error(f"{path}.type", f"must be {' or '.join(kinds)}")
    if not is_int(amount.get("value")) or amount["value"] < 0:
        raise validation_error(f"{path}.value", "must be a non-negative integer")
    extra = set(amount) - {"type", "value"}
    if extra:
        raise validation_error(f"{path}.{sorted(extra)[0]}", "is not a member")
    return amount


def _names(path: str, value: Any) -> list[str]:
    names = require_list(path, value)
    if not all(isinstance(name, str) and name for name in names):
        raise validation_error(path, "must be an array of tool names")
    return names


def _edit(path: str, edit: Any) -> dict[str, Any]:
    edit = require_object(path, edit)
    kind = edit.get("type")
    if not isinstance(kind, str) or kind not in EDIT_TYPES:
        raise validation_error(
            f"{path}.type",
            f"{str(kind)[:60]!r} is not an edit the gateway can apply: use one of {', '.join(EDIT_TYPES)}",
        )
    if kind.startswith(CLEAR_THINKING):
        extra = set(edit) - {"type", "keep"}
        if extra:
            raise validation_error(f"{path}.{sorted(extra)[0]}", f"is not a member of {kind}")
        if edit.get("keep") is not None and edit["keep"] != "all":
            _amount(f"{path}.keep", edit["keep"], ("thinking_turns",))
        return edit
    extra = set(edit) - {"type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"}
    if extra:
        raise validation_error(f"{path}.{sorted(extra)[0]}", f"is not a member of {kind}")
    if edit.get("trigger") is not None:
        _amount(f"{path}.trigger", edit["trigger"], ("input_tokens", "tool_uses"))
    if edit.get("keep") is not None:
        _amount(f"{path}.keep", edit["keep"], ("tool_uses",))
    if edit.get("clear_at_least") is not None:
        _amount(f"{path}.clear_at_least", edit["clear_at_least"], ("input_tokens",))
    if edit.get("exclude_tools") is not None:
        _names(f"{path}.exclude_tools", edit["exclude_tools"])
    inputs = edit.get("clear_tool_inputs")
    if inputs is not None and not isinstance(inputs, bool):
        _names(f"{path}.clear_tool_inputs", inputs)
    return edit


def validate(value: Any) -> dict[str, Any]:
    """The `context_management` member, checked (400 naming the wrong part)."""
    management = require_object("context_management", value)
    extra = set(management) - {"edits"}
    if extra:
        raise validation_error(f"context_management.{sorted(extra)[0]}", "is not supported: only edits")
    edits = require_list("context_management.edits", management.get("edits", []))
    for index, edit in enumerate(edits):
        _edit(f"context_management.edits[{index}]", edit)
    return management


def _turns(items: list[dict[str, Any]]) -> list[list[int]]:
    """The indexes of each assistant turn's items (a run of assistant messages, tool calls and reasoning: one
    Anthropic assistant message)."""
    turns: list[list[int]] = []
    open_turn = False
    for index, item in enumerate(items):
        kind = item.get("type")
        assistant = kind in ASSISTANT_SIDE or (kind == "message" and item.get("role") == "assistant")
        if assistant:
            if not open_turn:
                turns.append([])
                open_turn = True
            turns[-1].append(index)
        else:  # a user message or a tool output (Anthropic's user message of tool results) ends the turn
            open_turn = False
    return turns


def _clear_thinking(items: list[dict[str, Any]], edit: dict[str, Any]) -> tuple[list[dict[str, Any]], dict | None]:
    keep = edit.get("keep")
    if keep == "all":
        return items, None
    kept = 1 if keep is None else keep["value"]
    thinking_turns = [t for t in _turns(items) if any(items[i].get("type") == "reasoning" for i in t)]
    cleared_turns = thinking_turns[: max(len(thinking_turns) - kept, 0)]
    dropped = {i for turn in cleared_turns for i in turn if items[i].get("type") == "reasoning"}
    if not dropped:
        return items, None
    tokens = sum(estimate_tokens(items[i]) for i in dropped)
    applied = {"type": edit["type"], "cleared_thinking_turns": len(cleared_turns), "cleared_input_tokens": tokens}
    return [item for index, item in enumerate(items) if index not in dropped], applied


def _clear_tool_uses(
    body: dict[str, Any], items: list[dict[str, Any]], edit: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict | None]:
    calls = [i for i, item in enumerate(items) if item.get("type") == "function_call"]
    trigger = edit.get("trigger") or DEFAULT_TRIGGER
    reached = len(calls) if trigger["type"] == "tool_uses" else estimate_tokens({**body, "input": items})
    if reached < trigger["value"]:
        return items, None
    keep = (edit.get("keep") or {}).get("value", DEFAULT_KEEP_TOOL_USES)
    excluded = set(edit.get("exclude_tools") or ())
    inputs = edit.get("clear_tool_inputs") or False
    outputs = {item.get("call_id"): i for i, item in enumerate(items) if item.get("type") == "function_call_output"}
    cleared, tokens, edited = 0, 0, list(items)
    for index in calls[: max(len(calls) - keep, 0)]:
        call = items[index]
        if call.get("name") in excluded:
            continue
        output_index = outputs.get(call.get("call_id"))
        if output_index is None or items[output_index].get("output") == PLACEHOLDER:
            continue
        before = estimate_tokens(items[output_index])
        edited[output_index] = {**items[output_index], "output": PLACEHOLDER}
        tokens += before - estimate_tokens(edited[output_index])
        if inputs is True or (isinstance(inputs, list) and call.get("name") in inputs):
            edited[index] = {**call, "arguments": "{}"}
            tokens += estimate_tokens(call) - estimate_tokens(edited[index])
        cleared += 1
    least = (edit.get("clear_at_least") or {}).get("value", 0)
    if not cleared or tokens < least:
        return items, None
    return edited, {"type": edit["type"], "cleared_tool_uses": cleared, "cleared_input_tokens": max(tokens, 0)}


def apply(body: dict[str, Any], management: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the body with its `input` edited, the applied edits), for a provider that does not take the member."""
    items = body.get("input")
    if not isinstance(items, list):
        return dict(body), []
    applied = []
    for edit in management.get("edits") or ():
        if edit["type"].startswith(CLEAR_THINKING):
            items, done = _clear_thinking(items, edit)
        else:
            items, done = _clear_tool_uses(body, items, edit)
        if done is not None:
            applied.append(done)
    return {**body, "input": items}, applied


def edit_context(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """The body a provider that does not take `context_management` is sent: the edits applied (and recorded in
    `ctx.extras[APPLIED_EDITS]` for the answer), the member itself left out."""
    edited, applied = apply(body, body[CONTEXT_EDITS])
    ctx.extras[APPLIED_EDITS] = applied
    edited.pop(CONTEXT_EDITS, None)
    return edited


def answer_member(ctx: Any, result: Any) -> dict[str, Any] | None:
    """The answer's `context_management` (`{applied_edits: [...]}`) when the request had the member: what an
    Anthropic-format provider reported, else the edits the gateway applied."""
    if CONTEXT_EDITS not in ctx.body:
        return None
    if isinstance(result.context_management, dict):
        return result.context_management
    return {"applied_edits": ctx.extras.get(APPLIED_EDITS, [])}
