"""The reasoning a canonical request asks for, read one way by routing and by every provider adapter.

A request asks for reasoning with `reasoning.effort`, with a token budget (`reasoning.max_tokens`, which a Messages
request's `thinking.budget_tokens` becomes), or with `reasoning.enabled: true`; `enabled: false` turns it off
whatever else is set. A budget without an effort asks for the effort of that budget (`effort_of_budget`): an
effort-only provider (OpenAI) gets that effort, Anthropic gets the budget itself as its thinking budget.
"""

from __future__ import annotations

from typing import Any

# The largest budget of each effort (above the last: xhigh), as Anthropic's budgets per effort are drawn.
THINKING_EFFORTS = ((2048, "low"), (8192, "medium"), (24576, "high"))


def effort_of_budget(budget: int) -> str:
    """The reasoning effort of a thinking budget in tokens."""
    return next((effort for limit, effort in THINKING_EFFORTS if budget <= limit), "xhigh")


def thinking_budget(reasoning: Any) -> int | None:
    """The token budget `reasoning` sets (`max_tokens` above 0), or None."""
    budget = reasoning.get("max_tokens") if isinstance(reasoning, dict) else None
    return budget if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None


def requested_effort(reasoning: Any) -> str | None:
    """The effort `reasoning` asks for: its `effort` as set (`none` included), else the effort of its budget
    (`thinking_budget`), else `medium` for `enabled: true`; None when it asks for nothing or `enabled` is false."""
    if not isinstance(reasoning, dict) or reasoning.get("enabled") is False:
        return None
    effort = reasoning.get("effort")
    if effort:
        return effort
    budget = thinking_budget(reasoning)
    if budget is not None:
        return effort_of_budget(budget)
    return "medium" if reasoning.get("enabled") is True else None


def reasons(reasoning: Any) -> bool:
    """Whether `reasoning` asks the model to reason (an effort other than `none`)."""
    return requested_effort(reasoning) not in (None, "none")
