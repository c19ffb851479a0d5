"""The public router API's own request members, in every wire format that takes them (their types and 400 rules
are the typed request's: inference.responses_request, rules generated from the types by inference.schema):

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

COMPRESSION = "context-compression"
ROUTER_ONLY = frozenset({"usage", "transforms"})


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
