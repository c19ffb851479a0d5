"""Members only some provider formats can honour: the candidates that cannot are left out of routing, and a request
no candidate can honour is a 400 naming the member and saying why (inference.routing_features collects these
checks). Nothing is accepted and dropped. What each format does with each member: docs/wire-formats.md.

- `top_logprobs`: log-probabilities come back from `openai-chat` and `openai-responses` providers (JSON and
  streamed); Anthropic's Messages API has none.
- `temperature` above 1: Anthropic takes 0..1 (nothing is clamped).
- `reasoning` on Anthropic: extended thinking needs a budget of at least 1024 tokens below `max_output_tokens`
  and no forced tool; a request whose cap, `tool_choice` or own budget (`reasoning.max_tokens` below 1024: it is
  never replaced by a larger one) rules that out is not sent there.
- `service_tier`: `auto` and `default` everywhere (nothing is sent to other vendors' chat endpoints: their standard
  tier); `flex` and `scale` at OpenAI; `priority` / `fast` at OpenAI and Anthropic; any tier at another vendor's
  chat endpoint that declares `service_tier` in its `supported_parameters` or declares nothing (forwarded).
- `text.verbosity` other than `medium` (the providers' default): OpenAI (Responses, and Chat on api.openai.com).
- `reasoning.summary` other than `auto` (what the provider gives by default, as Codex sends it): `openai-responses`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inference.pipeline.context import Candidate
from inference.reasoning_request import reasons, thinking_budget

Check = tuple[str, str, Callable[[Candidate], bool]]
MIN_THINKING_BUDGET = 1024
LOGPROB_FORMATS = frozenset({"openai-chat", "openai-responses", "echo"})
ANTHROPIC = "anthropic-messages"
ANTHROPIC_TIERS = frozenset({"auto", "default", "fast", "priority"})
EVERYWHERE_TIERS = frozenset({"auto", "default"})


def is_openai(candidate: Candidate) -> bool:
    """An endpoint of OpenAI's own API (the Responses format, or Chat Completions on api.openai.com)."""
    return candidate.api_format == "openai-responses" or (
        candidate.api_format == "openai-chat" and "api.openai.com" in candidate.base_url
    )


def _not_anthropic(candidate: Candidate) -> bool:
    return candidate.api_format != ANTHROPIC


def thinking_requested(body: dict[str, Any]) -> bool:
    """The request asks for reasoning that an Anthropic endpoint would translate to extended thinking."""
    if "anthropic_thinking" in body or "anthropic_output_config" in body:
        return False
    return reasons(body.get("reasoning"))


def forces_a_tool(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    if choice == "required":
        return True
    if isinstance(choice, dict):
        return choice.get("type") == "function" or (
            choice.get("type") == "allowed_tools" and choice.get("mode") == "required"
        )
    return False


def _reasoning_check(body: dict[str, Any]) -> Check | None:
    if not thinking_requested(body):
        return None
    cap = body.get("max_output_tokens")
    if isinstance(cap, int) and cap <= MIN_THINKING_BUDGET:
        reason = (
            f"Anthropic-format providers need max_output_tokens above {MIN_THINKING_BUDGET} for extended thinking "
            f"(a budget of at least {MIN_THINKING_BUDGET} tokens below the cap): raise max_output_tokens or turn "
            "reasoning off (effort none)"
        )
        return "reasoning", reason, _not_anthropic
    budget = thinking_budget(body.get("reasoning"))
    if budget is not None and budget < MIN_THINKING_BUDGET:
        reason = (
            f"Anthropic-format providers need a thinking budget of at least {MIN_THINKING_BUDGET} tokens: raise "
            "reasoning.max_tokens or give reasoning.effort alone"
        )
        return "reasoning.max_tokens", reason, _not_anthropic
    if forces_a_tool(body):
        reason = (
            "Anthropic-format providers do not think with a forced tool (tool_choice required or a function): "
            "use tool_choice auto or turn reasoning off (effort none)"
        )
        return "reasoning", reason, _not_anthropic
    return None


def _tier_allows(tier: str) -> Callable[[Candidate], bool]:
    def allows(candidate: Candidate) -> bool:
        if tier in EVERYWHERE_TIERS or is_openai(candidate) or candidate.api_format == "echo":
            return True
        if candidate.api_format == "openai-chat":  # another vendor: forwarded unless its endpoint declares otherwise
            declared = candidate.supported_parameters
            return not declared or "service_tier" in declared
        return candidate.api_format == ANTHROPIC and tier in ANTHROPIC_TIERS

    return allows


def member_checks(body: dict[str, Any]) -> list[Check]:
    """(member, why it was refused, predicate) for each member of the request only some formats honour."""
    checks: list[Check] = []
    if body.get("top_logprobs") is not None:
        reason = "log-probabilities only come back from openai-chat and openai-responses providers (not Anthropic)"
        checks.append(("top_logprobs", reason, lambda c: c.api_format in LOGPROB_FORMATS))
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and temperature > 1:
        reason = "Anthropic-format providers take a temperature of 0..1: send at most 1"
        checks.append(("temperature", reason, _not_anthropic))
    reasoning = _reasoning_check(body)
    if reasoning is not None:
        checks.append(reasoning)
    tier = body.get("service_tier")
    if isinstance(tier, str) and tier not in EVERYWHERE_TIERS:
        reason = (
            f"service_tier {tier!r} is served by OpenAI (flex, scale, priority), Anthropic (priority, fast) and "
            "chat endpoints taking service_tier; send auto or default"
        )
        checks.append(("service_tier", reason, _tier_allows(tier)))
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    if text.get("verbosity") not in (None, "medium"):
        reason = "only OpenAI providers take a verbosity (medium, the default, is honoured everywhere)"
        checks.append(("text.verbosity", reason, lambda c: is_openai(c) or c.api_format == "echo"))
    summary = body["reasoning"].get("summary") if isinstance(body.get("reasoning"), dict) else None
    if summary not in (None, "auto"):
        reason = (
            "only openai-responses providers choose the reasoning summary's length (auto, the provider's "
            "default, is honoured everywhere)"
        )
        checks.append(("reasoning.summary", reason, lambda c: c.api_format in ("openai-responses", "echo")))
    return checks
