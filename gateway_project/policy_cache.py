"""In-process caches of policy data for the data plane, kept current by the shared policy versions.

Every request carries `ctx.policy_version`, this process's global version (gateway_project/policy_versions.py):
when it moves (a catalog change, a Redis re-subscription) every `PolicyCache` drops all its entries. A change
inside one organization drops only the entries tagged with that organization (`scope=` of `get`), in every
cache, so one tenant's edits do not chill the others' caches. Entries without a scope depend only on the
global version (the catalog snapshot).

Models whose rows are cached call `watch_models(...)` from their app's `ready()`: a save or delete bumps the
organization of the row (or the global version for catalog rows) in the same transaction. Code that changes
rows without signals (`QuerySet.update`, raw SQL) calls `bump_policy_versions(...)` itself.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models.signals import post_delete, post_save

from gateway_project.policy_versions import (  # noqa: F401  (the interface of this module, re-exported)
    GLOBAL,
    KEYS,
    REDIS_CHANNEL,
    bump_policy_version,
    bump_policy_version_on_commit,
    bump_policy_versions,
    current_policy_version,
    listener,
    local_version,
    on_scope_change,
    org_scope,
    publisher,
    read_policy_version,
    redis_client,
    rows,
)

_redis_sync = redis_client  # the name rankings and tests use

_caches: weakref.WeakSet[PolicyCache] = weakref.WeakSet()


def scope_name(scope: Any) -> str | None:
    """The version scope of a cache entry: an organization id (UUID or its text) or a scope name."""
    if scope is None or (isinstance(scope, str) and (scope in (GLOBAL, KEYS) or scope.startswith("org:"))):
        return scope
    return org_scope(scope)


class PolicyCache:
    """A dict of loaded values valid for one global version, entries droppable per organization."""

    def __init__(self, name: str, max_entries: int = 50_000) -> None:
        self.name = name
        self.max_entries = max_entries
        self._version: int | None = None
        self._entries: dict[Any, Any] = {}
        self._scopes: dict[Any, str] = {}  # key -> scope, for entries that have one
        self._drops = 0  # moves when entries are dropped by scope: a value loaded meanwhile is not kept
        self._lock = threading.Lock()
        _caches.add(self)

    def peek(self, version: int, key: Any) -> Any:
        """The cached value for `key` at `version`, or None (nothing is loaded)."""
        if version != self._version:
            return None
        return self._entries.get(key)

    async def get(
        self,
        version: int,
        key: Any,
        loader: Callable[[], Awaitable[Any]],
        scope: Any = None,
        *,
        cache_none: bool = True,
    ) -> Any:
        """The cached value of `key`, else `await loader()`, kept under `scope` (a value or a function of it);
        a None loaded is not kept when `cache_none` is False."""
        if version != self._version:
            with self._lock:
                self._entries, self._scopes, self._version = {}, {}, version
        try:
            return self._entries[key]
        except KeyError:
            pass
        drops = self._drops
        value = await loader()
        if value is None and not cache_none:
            return value
        self.put(version, key, value, scope(value) if callable(scope) else scope, drops)
        return value

    @property
    def drops(self) -> int:
        return self._drops

    def contains(self, version: int, key: Any) -> bool:
        return version == self._version and key in self._entries

    def put(self, version: int, key: Any, value: Any, scope: Any = None, drops: int | None = None) -> None:
        """Keep `value` unless the version moved or entries were dropped since `drops` was read."""
        name = scope_name(scope)
        with self._lock:
            if version != self._version:
                if drops is not None and self._version is not None and version < self._version:
                    return  # loaded under a version that has moved on since
                self._entries, self._scopes, self._version = {}, {}, version
            if drops is not None and drops != self._drops:
                return
            if len(self._entries) >= self.max_entries:  # the oldest entry goes, never the whole cache
                oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._scopes.pop(oldest, None)
            self._entries[key] = value
            if name is not None:
                self._scopes[key] = name

    def forget(self, key: Any) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._scopes.pop(key, None)

    def drop_scope(self, scope: str) -> None:
        with self._lock:
            self._drops += 1
            if not self._scopes:
                return
            stale = [key for key, name in self._scopes.items() if name == scope]
            for key in stale:
                self._entries.pop(key, None)
                del self._scopes[key]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries, self._scopes, self._version = {}, {}, None


def _drop_everywhere(scope: str) -> None:
    for cache in list(_caches):
        cache.drop_scope(scope)


on_scope_change(_drop_everywhere)


def organization_of(instance) -> uuid.UUID | None:
    """The organization a watched row belongs to (None: a catalog row, or not found)."""
    if instance._meta.label == "accounts.Organization":
        return instance.pk
    organization_id = getattr(instance, "organization_id", None)
    if organization_id is not None:
        return organization_id
    for parent in ("workspace", "guardrail", "preset"):
        if getattr(instance, f"{parent}_id", None) is not None:
            try:
                return getattr(instance, parent).organization_id
            except ObjectDoesNotExist:
                return None
    return None


def _on_change(sender, instance, **kwargs) -> None:
    organization_id = organization_of(instance)
    scopes = [GLOBAL] if organization_id is None else [org_scope(organization_id)]
    if sender._meta.label == "accounts.ApiKey":
        scopes.append(KEYS)  # a key that did not exist may exist now: the unknown-key cache must forget it
    bump_policy_versions(scopes)


def watch_models(*models) -> None:
    """Bump the version of the row's organization (global for others) after any save or delete of these models."""
    for model in models:
        post_save.connect(_on_change, sender=model, dispatch_uid=f"policy-version-save-{model._meta.label}")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"policy-version-delete-{model._meta.label}")
