"""The `fusion` plugin: a panel of models answers the request in parallel, the request's model synthesizes.

Plugin object: `{"id": "fusion", "analysis_models": ["vendor/a", "vendor/b"], "max_chars": 20000}`. Before the
first turn every panel model gets the conversation (without tools, not streamed) under the request's routing
filters (guardrails, provider preferences, BYOK), each call held against the budgets before it goes upstream
and settled right after at most at its hold (inference.servertools.budget.LoopBudget): its cost; when it was
sent but may be unanswered and billed (a timeout after the send, a 2xx answer cut or unreadable, a 524, the
client gone) its worst case on the endpoint it went to (input bound and whole output cap, at most its hold;
its tokens added to the request's usage, marked `usage_estimated`); 0 when it failed otherwise. The
answers are put in a system message right above the last user message, with the instruction to compare them and
write one answer; the request's own `model` then answers as usual (streamed or not). Calls that fail are
listed; when every one fails the request fails with 502 before the synthesizing model is called. The panel's
tokens and what its calls were charged are added to the request's `usage` and cost; the stage in
`service_metadata` lists every call.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference.pipeline.context import Candidate, Usage
from inference.plugins.context import field_of, insert_before_last_user
from inference.plugins.registry import Plugin, register
from inference.providers.base import ProviderError, UpstreamCall
from metering.cost import price, settled_cost, settled_usage

FIELDS = frozenset({"id", "enabled", "analysis_models", "max_chars"})
MAX_PANEL = 8
DEFAULT_MAX_CHARS = 20_000
PANEL_DROPPED = ("tools", "tool_choice", "parallel_tool_calls", "text", "max_tool_calls", "stream")
INSTRUCTION = (
    "Several models answered the user's request below independently. Compare their answers: keep what they agree "
    "on, resolve their contradictions, add what only some of them covered and what all of them missed. Then "
    "write the single best answer to the user's request yourself. Do not mention the other models unless the "
    "user asks about them."
)


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in FIELDS:
            hint = ": the synthesizing model is the request's `model`" if key == "model" else ""
            raise validation_error(f"{name}.{key}", f"is not a field of the fusion plugin{hint}")
    if plugin.get("enabled") is not None and not isinstance(plugin["enabled"], bool):
        raise validation_error(f"{name}.enabled", "must be a boolean")
    models = plugin.get("analysis_models")
    if not isinstance(models, list) or not 1 <= len(models) <= MAX_PANEL:
        raise validation_error(f"{name}.analysis_models", f"is required: 1 to {MAX_PANEL} model slugs")
    for index, slug in enumerate(models):
        if not isinstance(slug, str) or not slug or len(slug) > 200 or models.index(slug) != index:
            raise validation_error(f"{name}.analysis_models[{index}]", "must be a distinct model slug")
    chars = plugin.get("max_chars")
    if chars is not None and (isinstance(chars, bool) or not isinstance(chars, int) or not 100 <= chars <= 100_000):
        raise validation_error(f"{name}.max_chars", "must be an integer from 100 to 100000")


async def _panel_candidates(ctx: Any, field: str, models: list[str]) -> list[list[Candidate]]:
    from inference.routing import candidates_of

    found = []
    for index, slug in enumerate(models):
        try:
            found.append(await candidates_of(ctx, slug))
        except GatewayError as error:
            where = f"{field}.analysis_models[{index}]"
            metadata = {**(error.metadata or {}), "field": where}
            raise GatewayError(error.status, f"{where} ('{slug}'): {error.message}", metadata=metadata) from None
    return found


async def _ask(ctx: Any, slug: str, candidates: list[Candidate], body: dict[str, Any], budget: Any) -> dict[str, Any]:
    """One panel call, its hold settled with its cost; a dict describing it (with `text`, `usage`, `cost`)."""
    from inference.handler import call_with_fallback
    from inference.providers.registry import get_adapter
    from inference.servertools.turns import unanswered_usage

    unanswered: list[tuple[Usage, Candidate, bool]] = []  # the call sent whose answer never came, if any

    async def attempt(call: UpstreamCall, candidate: Candidate, cred: Any):
        try:
            return await get_adapter(candidate.api_format).complete(call), candidate, cred
        except ProviderError as error:
            if error.maybe_billed:  # a timeout after the send, a 2xx answer cut or unreadable, a 524
                # bounded on `body`, as its hold was (call.body also carries the output cap the hold assumed)
                unanswered.append((unanswered_usage(body, candidate), candidate, cred.is_byok))
            raise

    first = len(ctx.outcome.attempts)
    try:
        result, candidate, cred = await call_with_fallback(ctx, candidates, body, False, attempt, lambda: False)
    except asyncio.CancelledError:  # the client is gone while the provider works: it may bill the call whole
        await budget.settle(budget.current.amount if budget.current else Decimal(0), False)
        raise
    except (ProviderError, GatewayError) as error:
        message = getattr(error, "message", str(error))
        failed = {"model": slug, "status": "failed", "error": message}
        if not unanswered:  # refused, or failed before the provider had it: nothing billed
            charged = await budget.settle(Decimal(0), False)
            return {**failed, "cost": float(charged), "cost_decimal": charged}
        # Sent and maybe billed (routing did not re-send it): its worst case on that endpoint, at most its hold.
        usage, candidate, is_byok = unanswered[-1]
        charged = await budget.settle(price(ctx, candidate, usage), is_byok)
        return {
            **failed,
            "provider": candidate.provider_slug,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "usage_estimated": True,
            "cost": float(charged),
            "usage": usage,
            "cost_decimal": charged,
        }
    finally:
        for entry in ctx.outcome.attempts[first:]:
            entry["fusion"] = "panel"
    usage = settled_usage(ctx, candidate, result.usage, result.output)
    cost = await budget.settle(settled_cost(ctx, candidate, usage), cred.is_byok)  # at most the call's hold
    return {
        "model": slug,
        "provider": candidate.provider_slug,
        "status": "completed",
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost": float(cost),
        "text": result.text,
        "usage": usage,
        "cost_decimal": cost,
    }


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    from inference.handler import upstream_body
    from inference.servertools.budget import LoopBudget

    field = field_of(ctx, plugin)
    models = plugin["analysis_models"]
    panel = await _panel_candidates(ctx, field, models)
    base = upstream_body(ctx)
    body = {k: v for k, v in base.items() if k not in PANEL_DROPPED} | {"input": state.input}
    budgets = [LoopBudget(ctx, candidates) for candidates in panel]
    try:
        for budget in budgets:  # every call held before any goes upstream (402 before anything is spent)
            await budget.hold_model_turn(body)
        asks = [_ask(ctx, m, c, body, b) for m, c, b in zip(models, panel, budgets, strict=True)]
        calls = await asyncio.gather(*asks)
    finally:
        for budget in budgets:
            await budget.close()
    answered = [c for c in calls if c["status"] == "completed"]
    fee = sum((c.pop("cost_decimal") for c in calls), Decimal(0))  # what the panel calls were charged
    state.cost += fee  # settled by the calls' own holds, not the plugins' fee hold: the plugin returns no fee
    for call in calls:  # answered calls, and calls charged unanswered (their estimate marks the total)
        if "usage" in call:
            state.add_usage(call.pop("usage"))
    limit = plugin.get("max_chars") or DEFAULT_MAX_CHARS
    stage = {"type": "plugin", "name": "fusion", "data": {"calls": [_public(c) for c in calls], "cost": float(fee)}}
    if not answered:
        ctx.pipeline.append({**stage, "summary": f"all {len(calls)} panel call(s) failed"})
        raise GatewayError(
            502, "The fusion plugin's panel failed: no model answered", metadata={"field": field, "calls": calls}
        )
    sections = [f"### Answer {n} ({c['model']})\n{c['text'][:limit]}" for n, c in enumerate(answered, start=1)]
    insert_before_last_user(state.input, INSTRUCTION + "\n\n" + "\n\n".join(sections))
    summary = f"{len(answered)} of {len(calls)} panel model(s) answered; the request's model synthesizes"
    ctx.pipeline.append({**stage, "summary": summary})
    return Decimal(0)


def _prompt_growth(ctx: Any, plugin: dict[str, Any]) -> int:
    """The most UTF-8 bytes the panel's answers can add to the synthesizing prompt (4 per character, at most
    `max_chars` characters of each answer, the instruction and each answer's heading): the synthesizing turn is
    held on a prompt grown by this before any panel call goes upstream."""
    limit = plugin.get("max_chars") or DEFAULT_MAX_CHARS
    headings = sum(len(f"\n\n### Answer {n} ({slug})\n".encode()) for n, slug in enumerate(plugin["analysis_models"]))
    return len(INSTRUCTION.encode()) + 64 + headings + 4 * limit * len(plugin["analysis_models"])


def _public(call: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if k not in ("text", "usage", "cost_decimal")}


register(Plugin(id="fusion", check=_check, run=_run, prompt_growth=_prompt_growth))
