"""Writes of the response cache on the management plane: purging an organization's entries."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings

from gateway_project.api.errors import GatewayError
from responsecache import db_store, redis_store
from responsecache.signals import cache_purged
from responsecache.store import redis_errors

logger = logging.getLogger("gateway.responsecache")


def cache_purge(*, organization_id: uuid.UUID, model: str | None = None, command: str | None = None) -> int:
    """Delete the organization's entries (only those answered by `model`, when given) from both stores; the number
    deleted. Redis unreachable: 503 (its entries could not be deleted; the database's are gone, a retry is safe).

    Recorded in the audit log (action `purge`, resource `response_cache`; audit receives `cache_purged`): by the
    management `command` that purged, else by the current request's actor."""
    deleted = db_store.purge(organization_id, model)
    if settings.GATEWAY_RESPONSE_CACHE_REDIS_URL:
        try:
            deleted += redis_store.purge(organization_id, model)
        except redis_errors() as error:
            logger.warning("response cache purge: Redis failed (%s: %s)", type(error).__name__, error)
            _audit(organization_id, model, deleted, command, redis="unavailable: its entries were not purged")
            raise GatewayError(
                503,
                "Redis is unavailable: the cache entries held there were not purged; retry",
                headers={"Retry-After": "1"},
            ) from None
    _audit(organization_id, model, deleted, command)
    return deleted


def _audit(organization_id, model: str | None, purged: int, command: str | None, **more) -> None:
    cache_purged.send(
        sender=cache_purge, organization_id=organization_id, model=model, purged=purged, command=command, more=more
    )


def cache_purge_expired() -> int:
    """Delete expired database entries (Redis expires its own)."""
    return db_store.purge_expired()
