"""Pieces every structured format needs: trace/span ids and the chat messages of a trace."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")


def _hex(value: str, length: int) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class TraceIds:
    """W3C-style ids: `trace_id` 32 hex, span ids 16 hex. `wrapper_span_id` is set when `span_name` asks for a
    span around the generation; `parent_span_id` is the caller's parent (the request's `parent_span_id`)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    wrapper_span_id: str | None


def trace_ids(trace: dict) -> TraceIds:
    given = (trace.get("trace_id") or "").lower().replace("-", "")
    trace_id = given if HEX32.match(given) and given.strip("0") else _hex(trace.get("trace_id") or trace["id"], 32)
    parent = trace.get("parent_span_id")
    if parent:
        parent = parent.lower() if HEX16.match(parent.lower()) else _hex(parent, 16)
    wrapper = _hex(f"span:{trace['id']}", 16) if trace.get("span_name") else None
    return TraceIds(trace_id, _hex(f"generation:{trace['id']}", 16), parent, wrapper)


def unix_nanos(timestamp: str | None) -> int | None:
    if not timestamp:
        return None
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1_000_000) * 1000


def generation_name(trace: dict) -> str:
    return trace.get("generation_name") or f"chat {trace.get('model') or trace.get('requested_model') or 'unknown'}"


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def input_messages(trace: dict) -> list[dict]:
    """`instructions` and `input` as [{role, content}] (empty under privacy mode)."""
    messages = []
    if trace.get("instructions"):
        messages.append({"role": "system", "content": trace["instructions"]})
    value = trace.get("input")
    if isinstance(value, str):
        messages.append({"role": "user", "content": value})
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and "role" in item:
                messages.append({"role": str(item["role"]), "content": _content_text(item.get("content"))})
    return messages


def output_messages(trace: dict) -> list[dict]:
    if "output_text" not in trace:
        return []
    return [{"role": "assistant", "content": trace.get("output_text") or ""}]
