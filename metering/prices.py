"""The price sheet of an endpoint, used by both the worst-case estimate (metering/estimate.py) and the cost of a
finished request (inference/accounting.py): one place that turns tokens into USD.

Prices are USD per token (per request for the fee), from the catalog (inference/catalog_loader.py):

| Price | Applies to | Empty means |
|---|---|---|
| `prompt_price` | input tokens that are neither cache reads nor cache writes | (required unless `is_free`) |
| `cached_prompt_price` | cache reads | the prompt price |
| `cache_write_5m_price` | tokens written to a 5-minute cache | the prompt price |
| `cache_write_1h_price` | tokens written to a 1-hour cache | the 5-minute write price |
| `completion_price` | output tokens other than reasoning | (required unless `is_free`) |
| `reasoning_price` | reasoning tokens | the completion price |
| `request_price` | once per request that reached the provider | 0 |
| `tier_multipliers` | every token price, by the tier the request was served at | 1 |

Tiers. The tier a request asks for (`request_tier`) is its `service_tier` (`fast` also for a Messages
`speed: "fast"`), else `auto`. A finished request is priced at the tier the provider reports it was served at
(`Usage.tier`: OpenAI's `service_tier` in the answer, Anthropic's `usage.service_tier`, or `fast` when its usage
reports `speed: "fast"`), and at the requested tier when the provider reports none. Its hold is priced at the
most expensive tier it could be served at (`hold_multiplier`): for `auto` (the provider or the account's default
decides) every tier the sheet lists, for a named tier that tier and its aliases (`fast` and `priority` are one
tier at OpenAI), never below 1x. A tier the sheet does not list costs 1x.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Any

from gateway_project.pipeline import Candidate, Usage

ONE = Decimal(1)
ZERO = Decimal(0)
# Costs are kept at 1e-10 USD, rounded up: the Generation row and the spend counters hold the same figure.
COST_QUANTUM = Decimal("1e-10")


def request_tier(body: dict[str, Any]) -> str:
    """The pricing tier a request asks for."""
    if body.get("speed") == "fast":
        return "fast"
    tier = body.get("service_tier")
    return tier if isinstance(tier, str) and tier else "auto"


# Names one provider reports for the tier another request names: held at the most expensive of them.
# (OpenAI answers `priority` to a request for `fast`; Anthropic's fast mode is its own tier, never `priority`.)
TIER_ALIASES = {"fast": ("priority",), "default": ("standard",), "standard": ("default",)}
UNPINNED_TIERS = frozenset({"auto", ""})


def tier_multiplier(candidate: Candidate, tier: str) -> Decimal:
    for name, multiplier in candidate.tier_multipliers:
        if name == tier:
            return multiplier
    return ONE


def hold_multiplier(candidate: Candidate, tier: str) -> Decimal:
    """The multiplier of the most expensive tier a request asking for `tier` could be served at (at least 1)."""
    if not candidate.tier_multipliers:
        return ONE
    if tier in UNPINNED_TIERS:
        return max(ONE, *(m for _, m in candidate.tier_multipliers))
    names = {tier, *TIER_ALIASES.get(tier, ())}
    return max(ONE, *(m for n, m in candidate.tier_multipliers if n in names))


def served_tier(usage: Usage, requested: str) -> str:
    """The tier a finished request is priced at: the one the provider reported, else the requested one."""
    return usage.tier or requested


def _or(value: Decimal | None, fallback: Decimal) -> Decimal:
    return fallback if value is None else value


def cache_write_prices(candidate: Candidate) -> tuple[Decimal, Decimal]:
    five = _or(candidate.cache_write_5m_price, candidate.prompt_price)
    return five, _or(candidate.cache_write_1h_price, five)


def max_input_price(candidate: Candidate) -> Decimal:
    """The highest price one input token can cost on this endpoint (before the tier multiplier)."""
    cached = _or(candidate.cached_prompt_price, candidate.prompt_price)
    return max(candidate.prompt_price, cached, *cache_write_prices(candidate))


def max_output_price(candidate: Candidate) -> Decimal:
    """The highest price one output token can cost on this endpoint (before the tier multiplier)."""
    return max(candidate.completion_price, _or(candidate.reasoning_price, candidate.completion_price))


def quantize_cost(cost: Decimal) -> Decimal:
    """`cost` rounded up to 1e-10 USD (the resolution of Generation.cost and of the spend counters)."""
    return cost.quantize(COST_QUANTUM, rounding=ROUND_CEILING) if cost else ZERO


def usage_cost(candidate: Candidate | None, usage: Usage, tier: str = "auto") -> Decimal:
    """USD cost of `usage` on `candidate`: what the upstream reported, else the price sheet at the tier it
    reported being served at, else at `tier` (the requested one)."""
    if usage.cost is not None:
        return quantize_cost(Decimal(usage.cost))
    if candidate is None or candidate.is_free:
        return ZERO
    prompt = candidate.prompt_price
    write_5m, write_1h = cache_write_prices(candidate)
    cached = min(usage.cached_tokens, usage.input_tokens)
    writes_5m = min(usage.cache_write_5m_tokens, usage.input_tokens - cached)
    writes_1h = min(usage.cache_write_1h_tokens, usage.input_tokens - cached - writes_5m)
    plain_input = usage.input_tokens - cached - writes_5m - writes_1h
    reasoning = min(usage.reasoning_tokens, usage.output_tokens)
    tokens = (
        plain_input * prompt
        + cached * _or(candidate.cached_prompt_price, prompt)
        + writes_5m * write_5m
        + writes_1h * write_1h
        + (usage.output_tokens - reasoning) * candidate.completion_price
        + reasoning * _or(candidate.reasoning_price, candidate.completion_price)
    )
    multiplier = tier_multiplier(candidate, served_tier(usage, tier))
    return quantize_cost(tokens * multiplier + candidate.request_price)


def bound_cost(candidate: Candidate, input_tokens: int, output_tokens: int, tier: str) -> Decimal:
    """USD cost of `input_tokens` and `output_tokens` each at the endpoint's highest price and at the most
    expensive tier a request asking for `tier` could be served at (the worst case)."""
    if candidate.is_free:
        return ZERO
    tokens = input_tokens * max_input_price(candidate) + output_tokens * max_output_price(candidate)
    return quantize_cost(tokens * hold_multiplier(candidate, tier) + candidate.request_price)
