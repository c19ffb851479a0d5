"""In-process caches of policy data for the data plane, invalidated across processes by one version counter.

Whenever data the hot path caches changes (keys, workspaces, guardrails, presets, budgets, BYOK, catalog),
the writer bumps the shared policy version after its transaction commits. Every process keeps a local
version (`current_policy_version()`), a counter that moves whenever the process learns of a change, and
every `PolicyCache` drops its entries when it moved. How a process learns of a change, without a read per
request:

- The process that made the change: at once (the bump moves the local version too).
- Other processes, with Redis (`REDIS_URL`): pushed. The bump is an INCR plus a PUBLISH on
  `gateway:policy-version`; a listener thread per process (`PolicyVersionListener`) receives it, typically
  well under a millisecond later. While the listener is not subscribed (start-up, Redis restarted or
  unreachable), every request reads the version from Redis instead, as a fallback; a (re)subscription
  counts as a change, so values lost with a Redis restart cannot hide one.
- Other processes, without Redis: the version row is read at most every `GATEWAY_POLICY_REFRESH_MS`
  (default 250 ms) by the request that finds it older; 0 reads it on every request. Run Redis when more
  than one gateway process serves traffic.

Models whose rows are cached call `watch_models(...)` from their app's `ready()`; code that changes rows
without signals (`QuerySet.update`, raw SQL) calls `bump_policy_version_on_commit()` itself.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.signals import post_delete, post_save

logger = logging.getLogger("gateway.policy")

REDIS_KEY = "gateway:policy-version"
REDIS_CHANNEL = "gateway:policy-version"
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


class LocalVersion:
    """This process's policy version: moves whenever the shared version is seen to change (or may have)."""

    def __init__(self) -> None:
        self.value = 1
        self.last_shared: int | None = None  # the shared version the local value stands for
        self.read_at = float("-inf")  # monotonic time of the last read of the shared version (no Redis)
        self._lock = threading.Lock()

    def observe(self, shared: int | None) -> int:
        """Record a shared version read or pushed; `None` means "unknown" (it moves the local version)."""
        with self._lock:
            if shared is None or shared != self.last_shared:
                self.last_shared = shared
                self.value += 1
            return self.value

    def reset(self) -> None:
        """Forget what was seen (tests: the database or Redis was reset under the process)."""
        with self._lock:
            self.last_shared = None
            self.read_at = float("-inf")
            self.value += 1


local_version = LocalVersion()


class PolicyVersionListener:
    """A daemon thread subscribed to the policy-version channel; `subscribed` is True while pushes arrive."""

    def __init__(self) -> None:
        self.subscribed = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._stop = threading.Event()

    def ensure_started(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="gateway-policy-listener", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        """Unsubscribe and end the thread (requests read the version per request until it starts again)."""
        self._stop.set()
        self.subscribed = False
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        import redis

        delay = 0.1
        while not self._stop.is_set():
            client = redis.Redis.from_url(settings.REDIS_URL, health_check_interval=10, socket_keepalive=True)
            pubsub = client.pubsub()
            try:
                pubsub.subscribe(REDIS_CHANNEL)
                confirmed = None
                while confirmed is None or confirmed.get("type") != "subscribe":
                    if self._stop.is_set():
                        return
                    confirmed = pubsub.get_message(timeout=1.0)
                # Subscribed (confirmed by Redis) first, then read: a bump between the two is seen by one of them.
                local_version.observe(int(client.get(REDIS_KEY) or 0))
                local_version.observe(None)  # pushes may have been missed while not subscribed
                self.subscribed = True
                delay = 0.1
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        local_version.observe(int(message["data"]))
            except Exception as error:  # Redis restarted or unreachable: requests read the version meanwhile
                if self.subscribed:
                    logger.warning("policy version listener lost Redis (%s); reading the version per request", error)
                self.subscribed = False
                self._stop.wait(delay)
                delay = min(delay * 2, 2.0)
            finally:
                self.subscribed = False
                try:
                    pubsub.close()
                    client.close()
                except Exception:
                    pass


listener = PolicyVersionListener()


def bump_policy_version() -> None:
    """Increment the shared policy version now, and this process's at once."""
    if settings.REDIS_URL:
        client = _redis_sync()
        shared = int(client.incr(REDIS_KEY))
        client.publish(REDIS_CHANNEL, shared)
        local_version.observe(None)
        local_version.observe(shared)
        return
    from accounts.models import PolicyVersion

    updated = PolicyVersion.objects.filter(name=ROW_NAME).update(version=F("version") + 1)
    if not updated:
        PolicyVersion.objects.get_or_create(name=ROW_NAME, defaults={"version": 1})
    local_version.reset()  # moves the local version; the next request reads the row again


def bump_policy_version_on_commit() -> None:
    """Increment the shared policy version once the current transaction commits."""
    transaction.on_commit(bump_policy_version)


def read_policy_version() -> int:
    """The current shared policy version (sync): Redis, or the version row."""
    if settings.REDIS_URL:
        return int(_redis_sync().get(REDIS_KEY) or 0)
    from accounts.models import PolicyVersion

    row = PolicyVersion.objects.filter(name=ROW_NAME).values_list("version", flat=True).first()
    return int(row or 0)


_read_policy_version_async = sync_to_async(read_policy_version, thread_sensitive=True)


async def current_policy_version() -> int:
    """This process's policy version for one request (see the module's docstring for how it stays current)."""
    if settings.REDIS_URL:
        if listener.subscribed:
            return local_version.value
        listener.ensure_started()
        return local_version.observe(int(await _redis_async().get(REDIS_KEY) or 0))
    refresh = settings.GATEWAY_POLICY_REFRESH_MS / 1000
    now = time.monotonic()
    if now - local_version.read_at >= refresh:
        shared = await _read_policy_version_async()
        local_version.read_at = now
        return local_version.observe(shared)
    return local_version.value


class PolicyCache:
    """A dict of loaded values valid for one policy version; values are loaded with an async loader."""

    def __init__(self, name: str, max_entries: int = 50_000) -> None:
        self.name = name
        self.max_entries = max_entries
        self._version: int | None = None
        self._entries: dict[Any, Any] = {}

    def peek(self, version: int, key: Any) -> Any:
        """The cached value for `key` at `version`, or None (nothing is loaded)."""
        if version != self._version:
            return None
        return self._entries.get(key)

    async def get(
        self, version: int, key: Any, loader: Callable[[], Awaitable[Any]], *, cache_none: bool = True
    ) -> Any:
        if version != self._version:
            self._entries = {}
            self._version = version
        try:
            return self._entries[key]
        except KeyError:
            pass
        value = await loader()
        if value is None and not cache_none:
            return value
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
