"""The models a router may choose from, with what it needs to compare them.

A catalog model is in the pool when it writes text, matches `allowed_models` (every model when the list is
absent) and none of `excluded_models`, and at least one of its endpoints passes every routing filter of the
request (guardrails, provider preferences, BYOK, the request's features) and has room for the prompt: the
estimated prompt tokens plus `max_output_tokens` within the endpoint's context length (not checked when the
request enables `context-compression`, which cuts the prompt to each endpoint's context). A request with an image
needs a model that reads images. Models left out are listed with the reason (`service_metadata`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from inference.pipeline.context import Candidate
from inference.routers.quality import quality_for

BYTES_PER_TOKEN = 4  # the prompt estimate: about 4 bytes of JSON per token
EXPECTED_OUTPUT_TOKENS = 1000  # the output assumed for the cost comparison when max_output_tokens is not set
IMAGE_PARTS = frozenset({"input_image", "image_url", "image"})


@dataclass(frozen=True, slots=True)
class Option:
    """One model of the pool."""

    slug: str
    quality: float | None  # for the prompt's category (None: the catalog has no score)
    coding: float | None  # the `programming` score (pareto-router)
    cost: Decimal  # estimated cost of this request on the model's cheapest fitting endpoint
    context_length: int | None

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.slug,
            "quality": self.quality,
            "coding_score": self.coding,
            "estimated_cost": float(self.cost),
            "context_length": self.context_length,
        }


def matches(slug: str, canonical: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(slug, p) or fnmatch.fnmatchcase(canonical, p) for p in patterns)


def prompt_tokens(body: dict[str, Any]) -> int:
    """About how many tokens the prompt takes (instructions, input and tools, 4 bytes of JSON per token)."""
    size = len(orjson.dumps([body.get("instructions"), body.get("input"), body.get("tools")]))
    return size // BYTES_PER_TOKEN + 1


def has_images(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("type") in IMAGE_PARTS or any(has_images(v) for v in value.values())
    if isinstance(value, list):
        return any(has_images(v) for v in value)
    return False


def compression_enabled(body: dict[str, Any]) -> bool:
    return any(
        isinstance(p, dict) and p.get("id") == "context-compression" and p.get("enabled") is not False
        for p in body.get("plugins") or ()
    )


def estimated_cost(candidate: Candidate, tokens: int, output: int) -> Decimal:
    return candidate.prompt_price * tokens + candidate.completion_price * output + candidate.request_price


def build_pool(
    body: dict[str, Any],
    snapshot: dict[str, list[Candidate]],
    request: Any,
    category: str,
    usable: Callable[[Candidate], str | None],
) -> tuple[list[Option], dict[str, str]]:
    """(the pool, {model slug: why it was left out}); `usable(candidate)` is None or the filter that refuses it."""
    tokens = prompt_tokens(body)
    cap = body.get("max_output_tokens") or 0
    images = has_images(body.get("input"))
    compresses = compression_enabled(body)  # context-compression cuts the prompt to each endpoint's context
    options: list[Option] = []
    excluded: dict[str, str] = {}
    for slug, endpoints in snapshot.items():
        first = endpoints[0]
        if slug != first.model_slug or (first.output_modalities and "text" not in first.output_modalities):
            continue  # a canonical-slug alias of a listed model, or a model that does not write text
        if request.allowed and not matches(slug, first.canonical_slug, request.allowed):
            continue
        if matches(slug, first.canonical_slug, request.excluded):
            excluded[slug] = "excluded_models"
            continue
        if images and "image" not in first.input_modalities:
            excluded[slug] = "does not read images"
            continue
        reasons = [usable(c) for c in endpoints]
        kept = [c for c, reason in zip(endpoints, reasons, strict=True) if reason is None]
        if not kept:
            excluded[slug] = reasons[0] or "no usable endpoint"
            continue
        fitting = [c for c in kept if compresses or not c.context_length or tokens + cap <= c.context_length]
        if not fitting:
            excluded[slug] = f"a prompt of about {tokens} tokens (+{cap} output) exceeds its context length"
            continue
        output = cap or EXPECTED_OUTPUT_TOKENS
        options.append(
            Option(
                slug=slug,
                quality=quality_for(first.quality_scores, category),
                coding=quality_for(first.quality_scores, "programming"),
                cost=min(estimated_cost(c, tokens, output) for c in fitting),
                context_length=max((c.context_length or 0 for c in fitting), default=0) or None,
            )
        )
    options.sort(key=lambda o: o.slug)
    return options, excluded
