"""The router step of candidate selection (inference.routing): the model a router plugin chose for the request.

It runs once per request, when the candidates are first resolved, so every routing filter (guardrails,
provider preferences, BYOK, the request's features) and the budget hold apply to the chosen model exactly as
to a model the client named. The choice becomes the request's `model`; a `plugin` stage in `service_metadata`
says which model and why. With `pin_model` and a session id (`session_id` or `x-session-id`), the choice is
kept for the session, per organization, once a request with it succeeded; a pinned model that the request can
no longer use (guardrails, context length, allowed_models) is replaced by a new choice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inference.pipeline.context import Candidate, Context
from inference.routers.options import ROUTER_SLUGS, router_request
from inference.routers.pool import build_pool, prompt_tokens
from inference.routers.select import choose_auto, choose_pareto, no_model_error, pin, pinned

CHOICE_KEY = "routers.choice"
PIN_KEY = "routers.pin"


def route_model(
    ctx: Context, snapshot: dict[str, list[Candidate]], usable: Callable[[Candidate], str | None]
) -> str | None:
    """The slug the request's router chose (the same on every call for a request), or None without a router."""
    chosen = ctx.extras.get(CHOICE_KEY)
    if chosen is not None:
        return chosen
    request = router_request(ctx.body)
    if request is None:
        return None
    from textscan.classifier import classify
    from textscan.texts import prompt_text

    classification = classify(prompt_text(ctx.body))
    options, excluded = build_pool(ctx.body, snapshot, request, classification.category, usable)
    if not options:
        raise no_model_error(request.kind, excluded)
    principal = ctx.principal
    key = None
    if request.pin_model and ctx.session_id:
        key = (principal.organization_id if principal is not None else None, ctx.session_id, request.kind)
    by_slug = {o.slug: o for o in options}
    previous = pinned(key) if key is not None else None
    frontier = None
    if previous in by_slug:
        option, reason = by_slug[previous], "pinned for the session by an earlier request (pin_model)"
    elif request.kind == "pareto-router":
        option, reason, frontier = choose_pareto(options, request.min_score, request.field)
    else:
        option, reason = choose_auto(options, request.cost_tier)
    if key is not None:
        ctx.extras[PIN_KEY] = (key, option.slug)
    ctx.extras[CHOICE_KEY] = option.slug
    if not ctx.extras.get("inference.requested"):  # the Generation's requested model: the router's slug
        ctx.extras["inference.requested"] = ROUTER_SLUGS[request.kind]
    ctx.body["model"] = option.slug
    ctx.pipeline.append(_stage(ctx, request, option, reason, classification, options, excluded, frontier))
    return option.slug


def remember_pin(ctx: Context) -> None:
    """The request succeeded: keep its router's choice for the session."""
    entry = ctx.extras.get(PIN_KEY)
    if entry is not None:
        pin(*entry)


def _stage(ctx, request, option, reason, classification, options, excluded, frontier) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": option.slug,
        "reason": reason,
        "category": classification.category,
        "language_type": classification.language_type,
        "prompt_tokens_estimate": prompt_tokens(ctx.body),
        "pinned": reason.startswith("pinned"),
        "candidates": [o.describe() for o in options],
        "excluded": excluded,
    }
    if request.kind == "pareto-router":
        data["min_coding_score"] = request.min_score
        data["frontier"] = [o.slug for o in frontier or ()]
    else:
        data["cost_tier"] = request.cost_tier
    return {
        "type": "plugin",
        "name": request.kind,
        "summary": f"chose {option.slug} ({classification.category} prompt): {reason}",
        "data": data,
    }
