"""The worst-case cost of a request, computed before it goes upstream (no tokenizer: cheap and safe)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.conf import settings

from inference.pipeline.context import Candidate

BYTES_PER_TOKEN = 3
PROMPT_FIELDS = ("instructions", "input", "tools")


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens estimated as the UTF-8 size of instructions, input and tools divided by 3, rounded up.

    Real tokenizers average 4 or more bytes per token on English and code; the estimate falls short only on
    text that tokenizes worse than 3 bytes per token (see docs/budgets.md, "Guarantee").
    """
    size = 0
    tokens = 0
    for name in PROMPT_FIELDS:
        value = body.get(name)
        if value is None:
            continue
        if name == "input" and isinstance(value, list) and value and isinstance(value[0], (int, list)):
            tokens += _token_ids(value)  # /embeddings token arrays: counted, not estimated
            continue
        if isinstance(value, str):
            size += len(value.encode())
        else:
            size += len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    return tokens - (-size // BYTES_PER_TOKEN)


def _token_ids(value: list) -> int:
    return sum(len(item) if isinstance(item, list) else 1 for item in value)


def output_token_cap(body: dict[str, Any], candidate: Candidate) -> int:
    """At most this many output tokens (reasoning included) can be billed for the request on `candidate`."""
    if "embeddings" in candidate.output_modalities:
        return 0  # an embeddings model produces no output tokens: it bills its input only
    caps = [cap for cap in (body.get("max_output_tokens"), candidate.max_output_tokens) if isinstance(cap, int)]
    if caps:
        return max(min(caps), 0)
    if candidate.context_length:
        return candidate.context_length
    return settings.GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS


def worst_case_cost(body: dict[str, Any], candidates: list[Candidate]) -> Decimal:
    """The highest cost the request can have on any of its candidate endpoints (USD)."""
    input_tokens = estimate_input_tokens(body)
    worst = Decimal(0)
    for candidate in candidates:
        if candidate.is_free:
            continue
        cost = input_tokens * candidate.prompt_price + output_token_cap(body, candidate) * candidate.completion_price
        worst = max(worst, cost)
    return worst
