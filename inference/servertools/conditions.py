"""`stop_server_tools_when`: conditions that end the server-tool loop (combined with OR).

Each is checked after a turn whose server-tool calls ran (a "step"). When one holds, the next turn is the
final one, made with tool calls disabled.

| type | field | holds when |
|---|---|---|
| `step_count_is` | `step_count` | the steps taken so far reach `step_count` |
| `max_cost` | `max_cost_in_dollars` | the cost so far (model turns and tool fees) reaches the amount |
| `has_tool_call` | `tool_name` | the last step called that tool (a server tool's kind or function name, or a |
|   |   | client function's name) |
| `max_tokens_used` | `max_tokens` | input + output tokens of all turns so far reach `max_tokens` |
| `finish_reason_is` | `reason` | the last turn's finish reason (`tool_calls`, `stop`, `length`, ...) equals `reason` |
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class Progress:
    """What the loop has done so far, as the conditions see it."""

    steps: int
    cost: Decimal
    tokens: int
    last_tool_names: frozenset[str]  # function names and server-tool kinds the last turn called
    last_finish_reason: str


def _holds(condition: dict[str, Any], progress: Progress) -> bool:
    kind = condition["type"]
    if kind == "step_count_is":
        return progress.steps >= condition["step_count"]
    if kind == "max_cost":
        return progress.cost >= Decimal(str(condition["max_cost_in_dollars"]))
    if kind == "has_tool_call":
        return condition["tool_name"] in progress.last_tool_names
    if kind == "max_tokens_used":
        return progress.tokens >= condition["max_tokens"]
    if kind == "finish_reason_is":
        return progress.last_finish_reason == condition["reason"]
    return False


def first_holding(conditions: list[dict[str, Any]], progress: Progress) -> dict[str, Any] | None:
    """The first condition that holds, or None."""
    for condition in conditions:
        if _holds(condition, progress):
            return condition
    return None
