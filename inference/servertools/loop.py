"""The server-side tool loop: call the model; when it calls server tools, run them in the gateway, append the
calls and their outputs to the conversation and call it again, until it answers without a server-tool call.

Bounds: at most `max_tool_calls` steps (a step is a turn whose server-tool calls ran; default and maximum
30), or, when `stop_server_tools_when` is set, until one of its conditions holds (inference.servertools
.conditions; still at most 30 steps). When a bound is reached while the model still calls tools, the calls of
that turn run and one final turn is made with tool calls disabled (`tool_choice: "none"`). A turn that calls a
client function tool ends the loop: its server calls run, and the client gets the function calls as usual.

Plugins run once before the first turn. Every turn is held against the budgets before it goes upstream and
settled after, at most at its hold (inference.servertools.budget, on budgets/turns.py). The outcome (Generation
record, `usage`, `service_metadata`) carries the summed tokens and cost of all turns (what they were charged),
the number of tool calls, and one pipeline stage listing the steps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from inference.handler import SHAPE_KEY, _fail_stream, upstream_body
from inference.ingress import ingress_of
from inference.ingress.common import LoopAnswer
from inference.pipeline.context import Candidate, Context
from inference.providers.base import ProviderError
from inference.servertools.budget import LoopBudget
from inference.servertools.calls import max_fees, run_calls
from inference.servertools.citations import annotate_output
from inference.servertools.conditions import Progress, first_holding
from inference.servertools.plan import Plan
from inference.servertools.state import LoopState, assistant_items, initial_state, turn_body
from inference.servertools.turns import JsonTurns, StreamTurns, Turn
from metering.cost import settled_cost, settled_usage

MAX_STEPS = 30


async def run_loop(ctx: Context, responder: Any, candidates: list[Candidate], plan: Plan) -> None:
    state = initial_state(ctx.body, plan)
    base = upstream_body(ctx)
    budget = LoopBudget(ctx, candidates)
    turns = StreamTurns(ctx, responder, state.sources) if ctx.stream else JsonTurns(ctx, responder)
    server_names = set(plan.server_tools)
    last: Turn | None = None
    first = LoopBudget(ctx, candidates)  # the first model turn, held before plugins that call upstream run
    try:
        await _hold_first_turn(ctx, plan, state, base, first)
        await _run_plugins(ctx, plan, state, budget)
        while True:
            body = turn_body(base, plan, state)
            # 402 before the turn goes upstream when a limit cannot take it
            await budget.adopt_model_turn(first, body)
            first_attempt = len(ctx.outcome.attempts)
            try:
                last = await turns.turn(body, candidates, server_names)
            finally:
                for entry in ctx.outcome.attempts[first_attempt:]:
                    entry["turn"] = state.turns + 1
            # priced like any answer; an answer without usage charged from the estimate; at most the turn's hold
            usage = settled_usage(ctx, last.candidate, last.result.usage, last.result.output)
            cost = await budget.settle(settled_cost(ctx, last.candidate, usage), last.credential.is_byok)
            _record_turn(state, last, cost)
            if state.final or not last.server_calls:
                break
            await _run_step(ctx, plan, state, last, budget, turns)
            if last.client_calls:
                break
        await _finish_plugins(ctx, plan, state)
        _stage(ctx, state)
        await _finish(ctx, responder, turns, state, last)
    except ProviderError as error:  # a turn failed after its first event went to the client
        await budget.settle_failure(state, turns)
        _outcome_totals(ctx, state)
        _stage(ctx, state)
        await _fail_stream(ctx, turns.writer, ctx.outcome.candidate, error)
    except BaseException:  # a refusal (402), a failure before the stream, a client that went away
        await budget.settle_failure(state, turns)
        _outcome_totals(ctx, state)
        _stage(ctx, state)
        raise
    finally:
        await first.close()
        await budget.close()


async def _hold_first_turn(ctx: Context, plan: Plan, state: LoopState, base: dict[str, Any], first: LoopBudget) -> None:
    """When plugins call upstream before the first turn (the `fusion` panel), hold that turn first, on its prompt
    grown by the most they can add: a request the budgets cannot take whole is refused (402) before any call."""
    growth = sum(plugin.prompt_growth(ctx, obj) for plugin, obj in plan.plugins)
    if growth <= 0:
        return
    body = turn_body(base, plan, state)
    body["input"] = [*body["input"], {"role": "system", "content": "x" * growth}]
    await first.hold_model_turn(body)


async def _run_plugins(ctx: Context, plan: Plan, state: LoopState, budget: LoopBudget) -> None:
    if not plan.plugins:
        return
    await budget.hold_fees(sum((p.max_fee(ctx, obj) for p, obj in plan.plugins), Decimal(0)))
    fees = Decimal(0)
    for plugin, obj in plan.plugins:
        fees += await plugin.run(ctx, obj, state)
    state.cost += await budget.settle(fees, False)
    shapers = sorted((pair for pair in plan.plugins if pair[0].shape is not None), key=lambda pair: pair[0].shape_last)
    if shapers:

        def shape(body: dict[str, Any], candidate: Candidate) -> dict[str, Any]:
            for plugin, obj in shapers:
                body = plugin.shape(ctx, obj, body, candidate)
            return body

        ctx.extras[SHAPE_KEY] = shape


async def _finish_plugins(ctx: Context, plan: Plan, state: LoopState) -> None:
    """Plugins that act on the answer (response-healing, output moderation): JSON answers only."""
    if ctx.stream:
        return
    for plugin, obj in plan.plugins:
        if plugin.finish is not None:
            await plugin.finish(ctx, obj, state)


async def _run_step(ctx: Context, plan: Plan, state: LoopState, turn: Turn, budget: LoopBudget, turns: Any) -> None:
    """Run the turn's server calls (one step) and decide whether the next turn is the final one."""
    await budget.hold_fees(max_fees(ctx, turn.server_calls, plan))
    fees = await run_calls(ctx, turn.server_calls, plan, state, getattr(turns, "writer", None))
    state.cost += await budget.settle(fees, False)
    state.steps += 1
    state.log[-1]["server_calls"] = [_call_entry(c) for c in turn.server_calls]
    names = {c.name for c in turn.server_calls} | {c.name for c in turn.client_calls}
    names |= {plan.server_tools[c.name][0].kind for c in turn.server_calls}
    progress = Progress(
        steps=state.steps,
        cost=state.cost,
        tokens=state.usage.input_tokens + state.usage.output_tokens,
        last_tool_names=frozenset(names),
        last_finish_reason=turn.result.finish_reason,
    )
    condition = first_holding(plan.conditions, progress)
    if condition is not None:
        state.final, state.stopped_by = True, condition["type"]
    elif state.steps >= min(plan.max_steps, MAX_STEPS):
        state.final = True
        state.stopped_by = "max_tool_calls" if not plan.conditions else "step_limit"


def _call_entry(call: Any) -> dict[str, Any]:
    try:
        arguments = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        arguments = call.arguments
    return {"name": call.name, "arguments": arguments}


def _record_turn(state: LoopState, turn: Turn, cost: Decimal) -> None:
    result = turn.result
    state.turns += 1
    state.add_usage(result.usage)
    state.cost += cost
    state.client_calls += len(turn.client_calls)
    state.output.extend(turn.visible)
    state.input.extend(assistant_items([i for i in result.output if i.get("type") == "message"]))
    state.log.append(
        {
            "turn": state.turns,
            "model": turn.candidate.model_slug,
            "provider": turn.candidate.provider_slug,
            "finish_reason": result.finish_reason,
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "cost": float(cost),
            "tools_disabled": state.final,
        }
    )


def _stage(ctx: Context, state: LoopState) -> None:
    if any(stage.get("type") == "server_tools" for stage in ctx.pipeline):
        return
    stopped = f"; stopped by {state.stopped_by}" if state.stopped_by else ""
    ctx.pipeline.append(
        {
            "type": "server_tools",
            "name": "server-tool loop",
            "summary": f"{state.turns} turn(s), {state.server_calls} server tool call(s){stopped}",
            "data": {
                "turns": state.turns,
                "steps": state.steps,
                "server_tool_calls": state.server_calls,
                "client_tool_calls": state.client_calls,
                "cost": float(state.cost),
                "stopped_by": state.stopped_by,
                "log": state.log,
            },
        }
    )


def _outcome_totals(ctx: Context, state: LoopState) -> None:
    outcome = ctx.outcome
    if state.turns or state.cost:  # also what plugins were charged before a first turn (a fusion panel that failed)
        outcome.usage = state.usage
        outcome.cost = state.cost
    outcome.tool_calls = state.server_calls + state.client_calls


async def _finish(ctx: Context, responder: Any, turns: Any, state: LoopState, last: Turn) -> None:
    outcome = ctx.outcome
    result = last.result
    outcome.upstream_id, outcome.finish_reason, outcome.status = result.upstream_id, result.finish_reason, result.status
    outcome.completed_at = datetime.now(UTC)
    if isinstance(turns, StreamTurns):
        await turns.writer.finish(result, state.usage, state.cost)
        _outcome_totals(ctx, state)
        return
    _outcome_totals(ctx, state)
    annotate_output(state.output, state.sources)
    outcome.output = state.output
    outcome.output_text = "".join(
        p.get("text", "") for i in state.output if i.get("type") == "message" for p in i.get("content") or ()
    )
    answer = LoopAnswer(state.output, state.usage, state.cost, result, last.candidate, last.credential.is_byok)
    payload = ingress_of(ctx).loop_json(ctx, answer)
    outcome.first_byte_sent = True
    await responder.send_json(200, payload)
