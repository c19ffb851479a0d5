"""`namespace` tools (a group of function tools under one name, as Codex declares its sub-agent tools) for the
formats that only know flat functions (Chat Completions, Messages).

The request's namespace `n` with function `f` is offered to the model as the function `n__f`; a call of `n__f`
comes back to the client as a call of `f` with `namespace: n`, as a Responses upstream answers it; a
`function_call` input item with a `namespace` goes up as a call of `n__f`. A Responses upstream gets the namespace
tools as they are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from inference.providers.base import CanonicalResult, FunctionCallDelta, FunctionCallDone

CallEvent = TypeVar("CallEvent", FunctionCallDelta, FunctionCallDone)

SEPARATOR = "__"


def flat_name(namespace: Any, name: Any) -> str:
    return f"{namespace}{SEPARATOR}{name}" if namespace else str(name or "")


def call_name(item: dict[str, Any]) -> str:
    """The flat function name of a `function_call` input item (its namespace folded in)."""
    return flat_name(item.get("namespace"), item.get("name", ""))


def flatten(tool: dict[str, Any]) -> list[dict[str, Any]]:
    """The function tools of a `namespace` tool, each under its flat name."""
    namespace = tool.get("name", "")
    return [
        {**inner, "name": flat_name(namespace, inner.get("name", ""))}
        for inner in tool.get("tools") or ()
        if isinstance(inner, dict)
    ]


def names(body: dict[str, Any]) -> dict[str, tuple[str, str]] | None:
    """flat name → (namespace, name) of the request's namespace tools; None (the common case) when it has none."""
    tools = body.get("tools")
    if not tools or not any(isinstance(t, dict) and t.get("type") == "namespace" for t in tools):
        return None
    found: dict[str, tuple[str, str]] = {}
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            for inner in tool.get("tools") or ():
                if isinstance(inner, dict):
                    found[flat_name(tool.get("name"), inner.get("name"))] = (str(tool.get("name")), inner.get("name"))
    return found


def restore_call(event: CallEvent, found: dict[str, tuple[str, str]]) -> CallEvent:
    """A streamed call (its `FunctionCallDelta` pieces and its `FunctionCallDone`) named as the client declared it."""
    pair = found.get(event.name)
    if pair is None:
        return event
    return replace(event, name=pair[1], namespace=pair[0])


def restore_result(result: CanonicalResult, found: dict[str, tuple[str, str]]) -> CanonicalResult:
    for item in result.output:
        pair = found.get(item.get("name")) if item.get("type") == "function_call" else None
        if pair is not None:
            item["name"] = pair[1]
            item["namespace"] = pair[0]
    return result
