"""Retention of the audit log: records older than GATEWAY_AUDIT_RETENTION_DAYS are deleted (0 keeps them all).

`prune()` deletes them in batches of BATCH rows (short transactions); `manage.py prune_audit_log` runs it, and
the data plane's refusal writer runs it at most once every PRUNE_EVERY seconds per process (audit/refusals.py),
so a flood of refusals cannot grow the table past the retention even where no cron job runs the command.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from audit.models import AuditEvent

logger = logging.getLogger("gateway.audit")

BATCH = 5000
PRUNE_EVERY = 3600.0
_last_prune: list[float | None] = [None]  # monotonic time of this process's last prune


def cutoff():
    """The creation time before which records are deleted, or None when they are kept forever."""
    days = settings.GATEWAY_AUDIT_RETENTION_DAYS
    return timezone.now() - timedelta(days=days) if days > 0 else None


def prune() -> int:
    """Delete the records past the retention; how many."""
    before = cutoff()
    if before is None:
        return 0
    deleted = 0
    while True:
        ids = list(AuditEvent.objects.filter(created_at__lt=before).values_list("id", flat=True)[:BATCH])
        if not ids:
            return deleted
        deleted += AuditEvent.objects.filter(id__in=ids).delete()[0]


def prune_now_and_then() -> None:
    """`prune()` when the last one in this process is PRUNE_EVERY seconds old (never fails the caller)."""
    now, last = time.monotonic(), _last_prune[0]
    if last is not None and now - last < PRUNE_EVERY:
        return
    _last_prune[0] = now
    try:
        deleted = prune()
    except Exception:
        logger.exception("pruning the audit log failed")
        return
    if deleted:
        logger.info("pruned %s audit record(s) older than %s day(s)", deleted, settings.GATEWAY_AUDIT_RETENTION_DAYS)
