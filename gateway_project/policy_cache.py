"""In-process caches of policy data for the data plane, invalidated across processes by one version counter.

Whenever data the hot path caches changes (keys, workspaces, guardrails, presets, budgets, BYOK, catalog),
the writer bumps the policy version, after its transaction commits. Each inference request reads the
current version once (one Redis GET, or one row read without Redis) and every `PolicyCache` drops its
entries when the version moved, so a change applies to the very next request in every process.

Models whose rows are cached call `watch_models(...)` from their app's `ready()`; code that changes rows
without signals (`QuerySet.update`, raw SQL) calls `bump_policy_version_on_commit()` itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.signals import post_delete, post_save

REDIS_KEY = "gateway:policy-version"
ROW_NAME = "policy"

_sync_redis = None
_async_redis: dict[int, Any] = {}
_lock = threading.Lock()


def _redis_sync():
    global _sync_redis
    if _sync_redis is None:
        import redis

        with _lock:
            if _sync_redis is None:
                _sync_redis = redis.Redis.from_url(settings.REDIS_URL)
    return _sync_redis


def _redis_async():
    """One asyncio Redis client per event loop (a client cannot be shared between loops)."""
    import redis.asyncio as aioredis

    loop_id = id(asyncio.get_running_loop())
    client = _async_redis.get(loop_id)
    if client is None:
        client = aioredis.Redis.from_url(settings.REDIS_URL)
        _async_redis[loop_id] = client
    return client


def bump_policy_version() -> None:
    """Increment the shared policy version now."""
    if settings.REDIS_URL:
        _redis_sync().incr(REDIS_KEY)
        return
    from accounts.models import PolicyVersion

    updated = PolicyVersion.objects.filter(name=ROW_NAME).update(version=F("version") + 1)
    if not updated:
        PolicyVersion.objects.get_or_create(name=ROW_NAME, defaults={"version": 1})


def bump_policy_version_on_commit() -> None:
    """Increment the shared policy version once the current transaction commits."""
    transaction.on_commit(bump_policy_version)


def read_policy_version() -> int:
    """The current policy version (sync)."""
    if settings.REDIS_URL:
        return int(_redis_sync().get(REDIS_KEY) or 0)
    from accounts.models import PolicyVersion

    row = PolicyVersion.objects.filter(name=ROW_NAME).values_list("version", flat=True).first()
    return int(row or 0)


_read_policy_version_async = sync_to_async(read_policy_version, thread_sensitive=True)


async def current_policy_version() -> int:
    """The current policy version, read once per request."""
    if settings.REDIS_URL:
        return int(await _redis_async().get(REDIS_KEY) or 0)
    return await _read_policy_version_async()


class PolicyCache:
    """A dict of loaded values valid for one policy version; values are loaded with an async loader."""

    def __init__(self, name: str, max_entries: int = 50_000) -> None:
        self.name = name
        self.max_entries = max_entries
        self._version: int | None = None
        self._entries: dict[Any, Any] = {}

    async def get(self, version: int, key: Any, loader: Callable[[], Awaitable[Any]]) -> Any:
        if version != self._version:
            self._entries = {}
            self._version = version
        try:
            return self._entries[key]
        except KeyError:
            pass
        value = await loader()
        if self._version == version:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = value
        return value

    def clear(self) -> None:
        self._entries = {}
        self._version = None


def _on_change(sender, **kwargs) -> None:
    bump_policy_version_on_commit()


def watch_models(*models) -> None:
    """Bump the policy version after any save or delete of these models."""
    for model in models:
        post_save.connect(_on_change, sender=model, dispatch_uid=f"policy-version-save-{model._meta.label}")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"policy-version-delete-{model._meta.label}")
