"""The sampled fraction of requests, picked as their Generation row is written, for the classifier.

Sampling is decided from the generation id (deterministic, ~1 µs for the requests not sampled), so the
aggregation can upsample by the same GATEWAY_RANKINGS_SAMPLE_RATE. The accounting transaction only keeps a
sampled prompt's text (encrypted, one bulk insert per batch); the classifier runs later, in the aggregation
(rankings/classification.py), not in that transaction.
"""

from __future__ import annotations

import hashlib
import logging

import orjson
from django.conf import settings
from django.db import connection
from django.dispatch import receiver

from gateway_project.encryption import EncryptionNotConfigured, encrypt_secret
from inference.batch_statements import deferred_statements
from inference.signals import generation_recording, generations_recorded
from rankings.models import PendingClassification
from textscan.texts import prompt_text

logger = logging.getLogger("gateway.rankings")


def is_sampled(generation_id, rate: float) -> bool:
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    digest = hashlib.blake2b(str(generation_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


# The sampled prompt of a row, between the two signals of its batch (an attribute of the unsaved instance).
PROMPT_ATTRIBUTE = "_rankings_prompt"


@receiver(generation_recording, dispatch_uid="rankings-classify-sampled")
def pick_sampled_generation(sender, generation, ctx, **kwargs) -> None:
    """Before the insert: remember the prompt of a sampled generation (no classification here)."""
    if not is_sampled(generation.id, float(settings.GATEWAY_RANKINGS_SAMPLE_RATE)):
        return
    text = prompt_text(getattr(ctx, "body", None) or {})
    if text.strip():
        setattr(generation, PROMPT_ATTRIBUTE, text)


@receiver(generations_recorded, dispatch_uid="rankings-queue-sampled")
def queue_sampled_generations(sender, generations, **kwargs) -> None:
    """After the batch's insert, in the same transaction: one insert of the sampled prompts, for the aggregation."""
    pending = []
    for generation in generations:
        text = getattr(generation, PROMPT_ATTRIBUTE, None)
        if text is None:
            continue
        try:
            token = encrypt_secret(text)
        except EncryptionNotConfigured:
            logger.error("no encryption key: the sampled generation %s is not classified", generation.id)
            continue
        pending.append(PendingClassification(generation_id=generation.id, text=token, created_at=generation.created_at))
    if not pending:
        return
    batch = deferred_statements()
    if batch is None:
        PendingClassification.objects.bulk_create(pending)
        return
    # PostgreSQL, in an accounting batch: one statement sent with the batch's insert and COMMIT (the ORM's
    # bulk_create cost about 0.7 ms of CPU and a round trip for each batch with a sampled row).
    values = orjson.dumps([[str(p.generation_id), p.text, p.created_at.isoformat()] for p in pending]).decode()
    batch.add(_pending_insert_sql(), [values])


_pending_sql: bytes | None = None


def _pending_insert_sql() -> bytes:
    global _pending_sql
    if _pending_sql is None:
        table = connection.ops.quote_name(PendingClassification._meta.db_table)
        _pending_sql = (
            (
                f"INSERT INTO {table} (generation_id, text, created_at) "
                "SELECT (e->>0)::uuid, e->>1, (e->>2)::timestamptz FROM jsonb_array_elements(%s::jsonb) AS a(e)"
            )
            .encode()
            .replace(b"%", b"%%")
            .replace(b"%%s", b"%s")
        )
    return _pending_sql
