"""Classification of the sampled generations, out of the accounting transaction.

Accounting only decides the sample (from the generation id, ~1 µs for the requests not sampled) and keeps the
sampled prompt's text, encrypted, in `PendingClassification` (rankings/receivers.py). The regular-expression
classifier (about 100 ms for a 20 KB prompt under load) runs here, in the aggregation command, before the
weekly sampled dataset is built: each pending row's category and language type are written on its
Generation row and the pending row is deleted.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from gateway_project.encryption import DecryptionFailed, EncryptionNotConfigured, decrypt_secret
from inference.models import Generation
from rankings.models import PendingClassification
from textscan.classifier import classify

logger = logging.getLogger("gateway.rankings")

BATCH = 500


def classify_pending(batch_size: int = BATCH) -> int:
    """Classify every pending sampled generation; the number of pending rows handled. Several runs at once
    share the work (rows claimed with SKIP LOCKED on PostgreSQL)."""
    handled = 0
    while True:
        with transaction.atomic():
            pending = PendingClassification.objects.order_by("created_at")
            if connection.features.has_select_for_update_skip_locked:
                pending = pending.select_for_update(skip_locked=True)
            rows = list(pending[:batch_size])
            if not rows:
                return handled
            classified = []
            for row in rows:
                try:
                    text = decrypt_secret(row.text)
                except (DecryptionFailed, EncryptionNotConfigured):
                    logger.error("pending classification of %s cannot be decrypted; dropped", row.generation_id)
                    continue
                result = classify(text)
                classified.append(
                    Generation(id=row.generation_id, category=result.category, language_type=result.language_type)
                )
            Generation.objects.bulk_update(classified, ["category", "language_type"])
            PendingClassification.objects.filter(generation_id__in=[row.generation_id for row in rows]).delete()
        handled += len(rows)
