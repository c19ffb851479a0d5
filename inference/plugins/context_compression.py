"""The `context-compression` plugin (middle-out): a prompt too long for a model's context window is cut from the
middle, per candidate endpoint, instead of failing upstream.

Plugin object: `{"id": "context-compression", "engine": "middle-out"}` (engine optional; the only one). On every
attempt the body for that candidate is measured (metering.estimate.prompt_token_estimate, at
GATEWAY_CONTEXT_COMPRESSION_BYTES_PER_TOKEN) against its context length minus the room kept for the answer
(the output cap sent upstream, at most half the context). When it does not fit, input items are removed from
the middle outwards: system and developer messages, the first item and everything from the last user message
on (the current turn, with its tool calls and outputs) are kept; a function call and its output go together.
If that is not enough, the longest remaining texts are cut in their middle (a marker says how much). What each
candidate lost is one pipeline stage. No fee: fewer prompt tokens are billed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings

from gateway_project.api.errors import validation_error
from inference.plugins.registry import Plugin, register
from metering.estimate import output_token_cap, prompt_token_estimate

KEY = "plugins.context_compression"
MAX_LISTED = 50  # removed items listed per candidate in the stage
MARKER = "\n[... {} characters removed by context-compression ...]\n"
KEPT_ROLES = ("system", "developer")


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in ("id", "enabled", "engine"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    if plugin.get("engine") not in (None, "middle-out"):
        raise validation_error(f"{name}.engine", "must be middle-out (the only compression engine)")


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    stage = {
        "type": "plugin",
        "name": "context-compression",
        "summary": "every prompt fits its model's context",
        "data": {"engine": "middle-out", "candidates": []},
    }
    ctx.pipeline.append(stage)
    ctx.extras[KEY] = stage  # filled by `_shape` as candidates are measured
    return Decimal(0)


def _budget(ctx: Any, candidate: Any) -> int | None:
    context = candidate.context_length
    if not context:
        return None
    return context - min(output_token_cap(ctx.body, candidate), context // 2)


def _protected(items: list[Any]) -> set[int]:
    keep = {i for i, item in enumerate(items) if isinstance(item, dict) and item.get("role") in KEPT_ROLES}
    first = next((i for i in range(len(items)) if i not in keep), None)
    if first is not None:
        keep.add(first)
    last_user = max(
        (i for i, it in enumerate(items) if isinstance(it, dict) and it.get("role") == "user"), default=None
    )
    keep.update(range(last_user if last_user is not None else len(items) - 1, len(items)))
    return keep


def _middle_out(indexes: list[int]) -> list[int]:
    """`indexes` ordered from the middle outwards."""
    middle = (len(indexes) - 1) / 2
    return [indexes[pos] for pos in sorted(range(len(indexes)), key=lambda pos: (abs(pos - middle), pos))]


def _partners(items: list[Any], index: int) -> set[int]:
    """The item and the function call / output sharing its call_id (removed together)."""
    call_id = items[index].get("call_id") if isinstance(items[index], dict) else None
    if not call_id:
        return {index}
    return {i for i, it in enumerate(items) if isinstance(it, dict) and it.get("call_id") == call_id}


def _shape(ctx: Any, plugin: dict[str, Any], body: dict[str, Any], candidate: Any) -> dict[str, Any]:
    budget = _budget(ctx, candidate)
    if budget is None:
        return body
    ratio = settings.GATEWAY_CONTEXT_COMPRESSION_BYTES_PER_TOKEN

    def measure(b: dict[str, Any]) -> int:
        return prompt_token_estimate(b, candidate, ratio)

    before = measure(body)
    if before <= budget:
        return body
    items = body.get("input")
    removed: set[int] = set()
    if isinstance(items, list):
        keep = _protected(items)
        empty = measure({"input": []})
        total = before
        for index in _middle_out([i for i in range(len(items)) if i not in keep]):
            if total <= budget:
                break
            group = _partners(items, index)
            if index in removed or group & keep:  # a call whose output is kept (or the reverse) stays with it
                continue
            removed |= group
            total -= sum(measure({"input": [items[i]]}) - empty for i in group)
        body = {**body, "input": [item for i, item in enumerate(items) if i not in removed]}
    body, truncated = _truncate(body, measure, budget)
    after = measure(body)
    _report(ctx, candidate, budget, before, after, items if isinstance(items, list) else [], sorted(removed), truncated)
    return body


def _text_slots(body: dict[str, Any]) -> list[tuple[Any, Any, int]]:
    """(container, key, length) of every text of the input outside system/developer messages."""
    slots: list[tuple[Any, Any, int]] = []
    items = body.get("input")
    if isinstance(items, str):
        return [(body, "input", len(items))]
    for item in items or ():
        if not isinstance(item, dict) or item.get("role") in KEPT_ROLES:
            continue
        for key in ("content", "output"):
            value = item.get(key)
            if isinstance(value, str):
                slots.append((item, key, len(value)))
            elif isinstance(value, list):
                slots.extend(
                    (p, "text", len(p["text"])) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
    return slots


def _truncate(body: dict[str, Any], measure: Any, budget: int) -> tuple[dict[str, Any], list[int]]:
    """Cut the middle of the longest texts until the body fits (copies what it changes). Returns the characters
    removed from each text cut."""
    cut: list[int] = []
    for _ in range(8):
        excess = measure(body) - budget
        if excess <= 0:
            break
        body = _copy_input(body)
        slots = _text_slots(body)
        if not slots:
            break
        container, key, length = max(slots, key=lambda s: s[2])
        # bytes to drop: the excess in tokens × bytes per token, with room for the marker (text counted in chars
        # is at most its bytes, so this may cut a little more than needed, never less on ASCII)
        drop = min(length, int(excess * settings.GATEWAY_CONTEXT_COMPRESSION_BYTES_PER_TOKEN) + 64)
        if drop <= 0:
            break
        text = container[key]
        head = (length - drop) // 2
        container[key] = text[:head] + MARKER.format(drop) + text[head + drop :]
        cut.append(drop)
    return body, cut


def _copy_input(body: dict[str, Any]) -> dict[str, Any]:
    """The body with its input items and their content parts copied (the caller's objects stay intact)."""
    items = body.get("input")
    if not isinstance(items, list):
        return dict(body)
    copied = []
    for item in items:
        if isinstance(item, dict):
            item = dict(item)
            for key in ("content", "output"):
                if isinstance(item.get(key), list):
                    item[key] = [dict(p) if isinstance(p, dict) else p for p in item[key]]
        copied.append(item)
    return {**body, "input": copied}


def _report(ctx, candidate, budget, before, after, items, removed, truncated) -> None:
    stage = ctx.extras.get(KEY)
    if stage is None:
        return
    entry = {
        "model": candidate.model_slug,
        "provider": candidate.provider_slug,
        "context_length": candidate.context_length,
        "input_budget": budget,
        "estimate_before": before,
        "estimate_after": after,
        "fits": after <= budget,
        "removed_items": len(removed),
        "removed": [_describe(i, items[i]) for i in removed[:MAX_LISTED]],
        "truncated_chars": truncated,
    }
    entries = [
        e for e in stage["data"]["candidates"] if (e["model"], e["provider"]) != (entry["model"], entry["provider"])
    ]
    stage["data"]["candidates"] = [*entries, entry]
    removed_total = sum(e["removed_items"] for e in stage["data"]["candidates"])
    stage["summary"] = f"compressed for {len(stage['data']['candidates'])} endpoint(s): {removed_total} item(s) removed"


def _describe(index: int, item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        return {"index": index}
    return {"index": index, "type": item.get("type", "message"), "role": item.get("role")}


register(Plugin(id="context-compression", check=_check, run=_run, shape=_shape, shape_last=True))
