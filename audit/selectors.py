"""Reads of the audit log."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from audit.models import AuditEvent

FILTERS = {
    "resource_type": "resource_type",
    "resource_id": "resource_id",
    "action": "action",
    "source": "source",
    "actor": "actor",
    "since": "created_at__gte",
    "until": "created_at__lt",
}


def audit_event_list(*, organization_id: uuid.UUID, filters: dict[str, Any]) -> QuerySet[AuditEvent]:
    """The organization's audit records, newest first, narrowed by `filters` (AuditFilterSerializer's data)."""
    lookups = {FILTERS[name]: value for name, value in filters.items() if name in FILTERS}
    return AuditEvent.objects.filter(organization_id=organization_id, **lookups).order_by("-created_at", "-id")
