"""Checkers of the public router API's own request members, in every wire format that takes them:

- `usage: {include: boolean}`: usage with its cost is in every JSON answer and at the end of every Responses and
  Messages stream; on a Chat Completions stream `include: true` asks for the final usage chunk (as
  `stream_options.include_usage` does); `false` removes nothing (the usage is what the request is billed on);
- `transforms`: `["middle-out"]` turns on the `context-compression` plugin (a prompt too long for an endpoint's
  context is cut from the middle); `[]` asks for no transform, which is the default here;
- `min_p`, `top_a` (0..1), `repetition_penalty` (0..2): sampling parameters, sent to the endpoints that support
  them (inference.router_parameters).

`fold_router_members(body)` applies `transforms` (a plugin entry) and removes `usage` and `transforms` from the
canonical body; it costs one `isdisjoint` for a request without them.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error

TRANSFORMS = frozenset({"middle-out"})
COMPRESSION = "context-compression"
ROUTER_ONLY = frozenset({"usage", "transforms"})


def check_transforms(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise validation_error(name, "must be an array")
    for index, item in enumerate(value):
        if not isinstance(item, str) or item not in TRANSFORMS:
            raise validation_error(f"{name}[{index}]", "must be middle-out (the only transform)")


def _bounded(low: float, high: float):
    def check(name: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise validation_error(name, "must be a number")
        if not low <= value <= high:
            raise validation_error(name, f"must be between {low} and {high}")

    return check


check_min_p = _bounded(0, 1)
check_top_a = _bounded(0, 1)
check_repetition_penalty = _bounded(0, 2)


def fold_router_members(body: dict[str, Any]) -> dict[str, Any]:
    """`transforms` → the context-compression plugin; `usage` and `transforms` leave the canonical body."""
    if ROUTER_ONLY.isdisjoint(body):
        return body
    body.pop("usage", None)
    transforms = body.pop("transforms", None)
    if transforms and "middle-out" in transforms:
        plugins = list(body.get("plugins") or ())
        if not any(isinstance(p, dict) and p.get("id") == COMPRESSION for p in plugins):
            plugins.append({"id": COMPRESSION})
        body["plugins"] = plugins
    return body
