"""The router plugin objects and the model slugs that name a router.

- `auto-router` / `auto-beta-router`: `allowed_models` and `excluded_models` (arrays of slug patterns, `*`
  matching any run of characters, e.g. `anthropic/*`), `cost_tier` (`low`, `medium` (default), `high`),
  `pin_model` (boolean, default true: with a session id the choice is kept for the session).
- `pareto-router`: `min_coding_score` (0 to 1, default 0.8), `allowed_models`, `excluded_models`, `pin_model`.

A request uses a router when it has one of these plugins enabled, or when its `model` is the router's slug
(`openrouter/auto`, `openrouter/auto-beta`, `openrouter/pareto-code`: the plugin's defaults). With a router,
`model` must be absent or that router's slug and `models` absent: the router chooses the model, and a
setting the request makes elsewhere would otherwise be ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway_project.api.errors import validation_error

ROUTER_SLUGS = {
    "auto-router": "openrouter/auto",
    "auto-beta-router": "openrouter/auto-beta",
    "pareto-router": "openrouter/pareto-code",
}
SLUG_ROUTERS = {slug: plugin_id for plugin_id, slug in ROUTER_SLUGS.items()}
COST_TIERS = ("low", "medium", "high")
MAX_PATTERNS = 100
COMMON_FIELDS = frozenset({"id", "enabled", "allowed_models", "excluded_models", "pin_model"})
FIELDS = {
    "auto-router": COMMON_FIELDS | {"cost_tier"},
    "auto-beta-router": COMMON_FIELDS | {"cost_tier"},
    "pareto-router": COMMON_FIELDS | {"min_coding_score"},
}
DEFAULT_MIN_CODING_SCORE = 0.8


@dataclass(frozen=True, slots=True)
class RouterRequest:
    """The router a request uses, with its settings."""

    kind: str  # the plugin id
    field: str  # where its settings are (plugins[i]) or `model` when the slug alone asked for it
    allowed: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    cost_tier: str = "medium"
    pin_model: bool = True
    min_score: float = DEFAULT_MIN_CODING_SCORE


def _patterns(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, list) or len(value) > MAX_PATTERNS:
        raise validation_error(name, f"must be an array of at most {MAX_PATTERNS} model slug patterns")
    for index, pattern in enumerate(value):
        if not isinstance(pattern, str) or not pattern or len(pattern) > 200:
            raise validation_error(f"{name}[{index}]", "must be a model slug pattern of 1 to 200 characters")


def check_router(name: str, plugin: dict[str, Any]) -> None:
    """400 naming the field of a router plugin object that is not valid."""
    kind = plugin["id"]
    for key in plugin:
        if key not in FIELDS[kind]:
            raise validation_error(f"{name}.{key}", f"is not a field of the {kind} plugin")
    _patterns(f"{name}.allowed_models", plugin.get("allowed_models"))
    _patterns(f"{name}.excluded_models", plugin.get("excluded_models"))
    if plugin.get("cost_tier") is not None and plugin["cost_tier"] not in COST_TIERS:
        raise validation_error(f"{name}.cost_tier", f"must be one of {', '.join(COST_TIERS)}")
    if plugin.get("pin_model") is not None and not isinstance(plugin["pin_model"], bool):
        raise validation_error(f"{name}.pin_model", "must be a boolean")
    score = plugin.get("min_coding_score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1):
        raise validation_error(f"{name}.min_coding_score", "must be a number from 0 to 1")


def router_request(body: dict[str, Any]) -> RouterRequest | None:
    """The router the request asks for (400 when it is combined with a model choice of its own), or None."""
    model = body.get("model")
    found: list[tuple[str, dict[str, Any]]] = []
    for index, plugin in enumerate(body.get("plugins") or ()):
        if isinstance(plugin, dict) and plugin.get("id") in ROUTER_SLUGS and plugin.get("enabled") is not False:
            found.append((f"plugins[{index}]", plugin))
    if not found:
        if model not in SLUG_ROUTERS:
            return None
        found.append(("model", {"id": SLUG_ROUTERS[model]}))
    if len(found) > 1:
        raise validation_error(found[1][0], "only one router plugin can choose the model of a request")
    field, plugin = found[0]
    kind = plugin["id"]
    if model is not None and model != ROUTER_SLUGS[kind]:
        raise validation_error(
            "model", f"the {kind} plugin chooses the model: leave `model` out or set it to {ROUTER_SLUGS[kind]}"
        )
    if body.get("models"):
        raise validation_error("models", f"the {kind} plugin chooses the model: leave `models` out")
    score = plugin.get("min_coding_score")
    return RouterRequest(
        kind=kind,
        field=field,
        allowed=tuple(plugin.get("allowed_models") or ()),
        excluded=tuple(plugin.get("excluded_models") or ()),
        cost_tier=plugin.get("cost_tier") or "medium",
        pin_model=plugin.get("pin_model") is not False,
        min_score=DEFAULT_MIN_CODING_SCORE if score is None else float(score),
    )
