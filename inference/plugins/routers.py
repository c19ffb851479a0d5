"""The router plugins (`auto-router`, `auto-beta-router`, `pareto-router`) in the plugin registry.

They choose the request's model while candidates are resolved (inference/routers/route.py), before budgets
hold and before any upstream call; in the server-tool loop they do nothing more. See docs/plugins.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gateway_project.api.errors import validation_error
from inference.plugins.registry import Plugin, register
from inference.routers.options import ROUTER_SLUGS, check_router


def _check(name: str, plugin: dict[str, Any]) -> None:
    if plugin.get("enabled") is not None and not isinstance(plugin["enabled"], bool):
        raise validation_error(f"{name}.enabled", "must be a boolean")
    check_router(name, plugin)


async def _nothing(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    return Decimal(0)


for _kind in ROUTER_SLUGS:
    register(Plugin(id=_kind, check=_check, run=_nothing, chooses_model=True))
