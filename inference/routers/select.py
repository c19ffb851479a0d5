"""How a router chooses: the transparent heuristics of docs/plugins.md, the session pin, the pipeline stage.

`auto-router` / `auto-beta-router`: the prompt's category (the rankings classifier) picks each model's quality
score from the catalog (`quality_scores`; a model without one counts as UNKNOWN_QUALITY); `cost_tier` sets a
quality band below the best model of the pool (`high` 0, `medium` 0.1, `low` 0.3), and the router takes the
cheapest model in that band (estimated cost of this request), then the better one, then the slug.

`pareto-router`: among the models with a `programming` (else `default`) score, the price/quality frontier (no
other model is at most as expensive and at least as good, one of them strictly); the cheapest frontier model
whose score reaches `min_coding_score`, or the best-scoring model when none does.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference.routers.pool import Option

UNKNOWN_QUALITY = 0.5
BANDS = {"high": 0.0, "medium": 0.1, "low": 0.3}
PIN_TTL_SECONDS = 1800  # a pin not used for this long is forgotten
PINS_MAX = 100_000
EPSILON = 1e-9
# (organization id, session id, router) -> (model slug, last use); per process, like sticky routing.
_pins: OrderedDict[tuple[Any, str, str], tuple[str, float]] = OrderedDict()


def clear_pins() -> None:
    _pins.clear()


def pinned(key: tuple[Any, str, str]) -> str | None:
    entry = _pins.get(key)
    if entry is None or time.monotonic() - entry[1] > PIN_TTL_SECONDS:
        return None
    return entry[0]


def pin(key: tuple[Any, str, str], slug: str) -> None:
    _pins[key] = (slug, time.monotonic())
    _pins.move_to_end(key)
    if len(_pins) > PINS_MAX:
        _pins.popitem(last=False)


def _quality(option: Option) -> float:
    return UNKNOWN_QUALITY if option.quality is None else option.quality


def choose_auto(options: list[Option], cost_tier: str) -> tuple[Option, str]:
    best = max(_quality(o) for o in options)
    floor = best - BANDS[cost_tier]
    band = [o for o in options if _quality(o) >= floor - EPSILON]
    chosen = min(band, key=lambda o: (o.cost, -_quality(o), o.slug))
    reason = (
        f"cost_tier {cost_tier}: the cheapest of {len(band)} model(s) with quality >= {floor:.2f} "
        f"(best in the pool {best:.2f})"
    )
    return chosen, reason


def frontier(options: list[Option]) -> list[Option]:
    """The scored models no other scored model dominates (cheaper or equal and better or equal, one strictly)."""

    def dominates(a: Option, b: Option) -> bool:
        return a.cost <= b.cost and a.coding >= b.coding and (a.cost < b.cost or a.coding > b.coding)

    return [o for o in options if not any(dominates(other, o) for other in options if other is not o)]


def choose_pareto(options: list[Option], min_score: float, field: str) -> tuple[Option, str, list[Option]]:
    scored = [o for o in options if o.coding is not None]
    if not scored:
        raise validation_error(
            field, "no model the request may use has a quality score (the catalog's quality_scores) to route on"
        )
    edge = frontier(scored)
    meeting = [o for o in edge if o.coding >= min_score - EPSILON]
    if meeting:
        chosen = min(meeting, key=lambda o: (o.cost, -o.coding, o.slug))
        return chosen, f"the cheapest frontier model with a coding score >= {min_score}", edge
    chosen = max(scored, key=lambda o: (o.coding, -o.cost))
    return chosen, f"no model reaches a coding score of {min_score}: the best-scoring one", edge


def no_model_error(kind: str, excluded: dict[str, str]) -> GatewayError:
    listed = dict(list(excluded.items())[:50])
    return GatewayError(
        404,
        f"No model available for the {kind} plugin"
        + (f": {len(excluded)} model(s) left out" if excluded else ": no catalog model matches allowed_models"),
        metadata={"excluded": listed},
    )
