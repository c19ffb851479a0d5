"""Running the server-tool calls of one turn: concurrently, each shown to the client as an output item.

Each call becomes an item of the server tool's kind (`{type: "service:web_search", id, status, call_id,
arguments, output, ...kind-specific fields}`), and the model's call plus a `function_call_output` with the
tool's output are appended to the conversation for the next turn. A call whose arguments are not a JSON
object, or whose tool fails, gives the model an error output (the item's status is `failed`); the loop goes on.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

import orjson

from gateway_project.api.errors import GatewayError
from inference.providers.base import FunctionCallDone
from inference.response import new_item_id
from inference.servertools.plan import Plan
from inference.servertools.registry import ServerTool, ToolResult
from inference.servertools.state import LoopState

logger = logging.getLogger("gateway.servertools")


def _arguments(call: FunctionCallDone) -> dict[str, Any] | None:
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


async def _run_one(ctx: Any, implementation: ServerTool, tool: dict[str, Any], args: Any, state: LoopState):
    if args is None:
        return ToolResult(output="Error: the arguments must be a JSON object.", status="failed")
    try:
        return await implementation.run(ctx, tool, args, state)
    except GatewayError as error:
        return ToolResult(output=f"Error: {error.message}", status="failed")
    except Exception as error:  # a tool failure must not fail the request: the model is told
        logger.exception("server tool %s failed", implementation.kind)
        return ToolResult(output=f"Error: the tool failed ({type(error).__name__}).", status="failed")


def max_fees(ctx: Any, calls: list[FunctionCallDone], plan: Plan) -> Decimal:
    total = Decimal(0)
    for call in calls:
        implementation, tool = plan.server_tools[call.name]
        total += implementation.max_fee(ctx, tool)
    return total


async def run_calls(ctx: Any, calls: list[FunctionCallDone], plan: Plan, state: LoopState, writer: Any) -> Decimal:
    """Run the calls, show their items (streamed when `writer` is set), extend the conversation; the fees."""
    started = []
    for call in calls:
        implementation, tool = plan.server_tools[call.name]
        args = _arguments(call)
        item = {
            "type": implementation.kind,
            "id": new_item_id(implementation.item_prefix),
            "status": "in_progress",
            "call_id": call.call_id,
            "arguments": call.arguments,
            **implementation.started(args or {}),
        }
        started.append((call, implementation, tool, args, item))
    indexes = await writer.add_items([entry[4] for entry in started]) if writer is not None else []
    results = await asyncio.gather(*(_run_one(ctx, impl, tool, args, state) for _, impl, tool, args, _ in started))
    fees = Decimal(0)
    for position, ((call, _impl, _tool, _args, item), result) in enumerate(zip(started, results, strict=True)):
        done = {**item, **result.fields, "status": result.status, "output": result.output}
        if writer is not None:
            await writer.done_item(indexes[position], done)
        state.output.append(done)
        state.sources.update(result.sources)
        state.loaded.update(result.loaded)
        fees += result.fee
        state.input.append(
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
        )
        state.input.append({"type": "function_call_output", "call_id": call.call_id, "output": result.output})
    state.server_calls += len(calls)
    return fees
