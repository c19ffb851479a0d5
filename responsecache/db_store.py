"""The database store of the response cache (sync functions; the data plane calls them on its database threads).

Expired rows are deleted when read, when the organization stores a new entry, and by
`manage.py purge_response_cache --expired`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from responsecache.models import ResponseCacheEntry


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def get(organization_id: Any, key: str) -> str | None:
    row = ResponseCacheEntry.objects.filter(organization_id=organization_id, key=key).only("data", "expires_at").first()
    if row is None:
        return None
    if row.expires_at <= datetime.now(UTC):
        ResponseCacheEntry.objects.filter(pk=row.pk, expires_at__lte=datetime.now(UTC)).delete()
        return None
    return row.data


def put(organization_id: Any, key: str, value: bytes, model: str, expires: float) -> None:
    """Store (or replace) the entry; drop the organization's expired rows and its rows over the limit."""
    now = datetime.now(UTC)
    fields = {"model": model[:200], "data": value.decode(), "size": len(value), "created_at": now}
    fields["expires_at"] = _at(expires)
    entries = ResponseCacheEntry.objects.filter(organization_id=organization_id)
    with transaction.atomic():
        if not entries.filter(key=key).update(**fields):
            try:
                with transaction.atomic():
                    ResponseCacheEntry.objects.create(organization_id=organization_id, key=key, **fields)
            except IntegrityError:  # a concurrent request stored the same key first
                entries.filter(key=key).update(**fields)
        entries.filter(expires_at__lte=now).delete()
        limit = settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRIES
        over = entries.order_by("-expires_at").values_list("pk", flat=True)[limit : limit + 1000]
        if over:
            ResponseCacheEntry.objects.filter(pk__in=list(over)).delete()


def purge(organization_id: Any, model: str | None = None) -> int:
    entries = ResponseCacheEntry.objects.filter(organization_id=organization_id)
    if model is not None:
        entries = entries.filter(model=model)
    return entries.delete()[0]


def purge_expired() -> int:
    return ResponseCacheEntry.objects.filter(expires_at__lte=datetime.now(UTC)).delete()[0]
