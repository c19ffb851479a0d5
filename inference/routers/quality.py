"""Operator-set model quality: the catalog's `quality_scores` (0 to 1 per prompt category) as the routers read it.

`quality_scores` is a mapping whose keys are `default` or a category of the rankings classifier
(textscan/classifier.py: programming, roleplay, ..., trivia) and whose values are numbers from 0 to 1. A model's
quality for a prompt is the score of the prompt's category, else its `default`, else unknown (None).
"""

from __future__ import annotations

from typing import Any

from textscan.classifier import CATEGORIES

KEYS = ("default", *CATEGORIES)


def quality_scores_problem(value: Any) -> str | None:
    """Why `value` is not a valid `quality_scores` mapping, or None."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return "must be a mapping of category to a number from 0 to 1"
    for key, score in value.items():
        if key not in KEYS:
            return f"has the unknown key '{key}' (keys: {', '.join(KEYS)})"
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
            return f"'{key}' must be a number from 0 to 1"
    return None


def as_pairs(value: Any) -> tuple[tuple[str, float], ...]:
    """The catalog value as the sorted (category, score) pairs a Candidate carries."""
    if not isinstance(value, dict):
        return ()
    return tuple(sorted((str(k), float(v)) for k, v in value.items()))


def quality_for(pairs: tuple[tuple[str, float], ...], category: str) -> float | None:
    """The score of `category`, else `default`, else None."""
    scores = dict(pairs)
    if category in scores:
        return scores[category]
    return scores.get("default")
