"""Writes of the response cache on the management plane: purging an organization's entries."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings

from gateway_project.api.errors import GatewayError
from responsecache import db_store, redis_store
from responsecache.store import redis_errors

logger = logging.getLogger("gateway.responsecache")


def cache_purge(*, organization_id: uuid.UUID, model: str | None = None) -> int:
    """Delete the organization's entries (only those answered by `model`, when given) from both stores; the number
    deleted. Redis unreachable: 503 (its entries could not be deleted; the database's are gone, a retry is safe)."""
    deleted = db_store.purge(organization_id, model)
    if settings.GATEWAY_RESPONSE_CACHE_REDIS_URL:
        try:
            deleted += redis_store.purge(organization_id, model)
        except redis_errors() as error:
            logger.warning("response cache purge: Redis failed (%s: %s)", type(error).__name__, error)
            raise GatewayError(
                503,
                "Redis is unavailable: the cache entries held there were not purged; retry",
                headers={"Retry-After": "1"},
            ) from None
    return deleted


def cache_purge_expired() -> int:
    """Delete expired database entries (Redis expires its own)."""
    return db_store.purge_expired()
