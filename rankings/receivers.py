"""Classification of a sampled fraction of requests, as their Generation row is written.

Sampling is decided from the generation id (deterministic, ~1 µs for the requests not sampled), so the
aggregation can upsample by the same GATEWAY_RANKINGS_SAMPLE_RATE.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.dispatch import receiver

from inference.signals import generation_recording
from rankings.classifier import classify

MAX_CLASSIFIED_CHARS = 8_000


def is_sampled(generation_id, rate: float) -> bool:
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    digest = hashlib.blake2b(str(generation_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


def prompt_text(body: dict) -> str:
    """The instructions and the user-visible text of the input, as one string."""
    parts: list[str] = []
    if isinstance(body.get("instructions"), str):
        parts.append(body["instructions"])
    items = body.get("input")
    if isinstance(items, str):
        parts.append(items)
    elif isinstance(items, list):
        for item in items:
            content = item.get("content") if isinstance(item, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(parts)[:MAX_CLASSIFIED_CHARS]


@receiver(generation_recording, dispatch_uid="rankings-classify-sampled")
def classify_sampled_generation(sender, generation, ctx, **kwargs) -> None:
    if not is_sampled(generation.id, float(settings.GATEWAY_RANKINGS_SAMPLE_RATE)):
        return
    text = prompt_text(getattr(ctx, "body", None) or {})
    if not text.strip():
        return
    result = classify(text)
    generation.category = result.category
    generation.language_type = result.language_type
