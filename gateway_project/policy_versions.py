"""Shared policy versions: how every process learns that data its in-process caches hold has changed.

The database is the source of truth: one version row per scope (the model GATEWAY_POLICY_VERSION_MODEL
names, `accounts.PolicyVersion`; looked up like AUTH_USER_MODEL, so the kernel imports no app), bumped in the
same transaction as the change, so a change and its bump commit (or fail) together. Scopes:

- `policy`: the catalog and anything not tied to one organization; a bump flushes every cache (it moves
  `local_version`, the number each request carries as `ctx.policy_version`).
- `org:<organization id>`: a tenant's keys, workspaces, guardrails, presets, budgets, BYOK, destinations;
  a bump drops only the entries tagged with that organization (gateway_project/policy_cache.py).
- `keys`: any key created or changed; drops the cache of unknown keys (negative answers).

How other processes learn of a bump:

- With Redis (`REDIS_URL`): pushed. After the commit (`transaction.on_commit(..., robust=True)`, so a Redis
  failure never turns a committed write into a 500) the scope is PUBLISHed on `gateway:policy-version:<db>`; a
  listener thread per process applies it, typically well under a millisecond later. A publish that fails is
  kept and retried by the listener thread every second until Redis takes it.
- While the listener is not subscribed (start-up, Redis down or restarted), or without Redis: the version
  rows are read at most every `GATEWAY_POLICY_REFRESH_MS` (default 250 ms) by the request that finds them
  older; every changed row is applied. So a Redis outage delays no change by more than that interval, and a
  (re)subscription counts as a change of everything (pushes may have been missed).
- Even while subscribed, the rows are read every `GATEWAY_POLICY_RECHECK_MS` (default 5,000 ms): a push lost
  between a process that could not reach Redis and one that could delays a change by at most that long.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from django.apps import apps
from django.conf import settings
from django.db import transaction
from django.db.models import F

from gateway_project.db_deadline import db_reader
from gateway_project.redis_clients import sync_client

logger = logging.getLogger("gateway.policy")

_channels: dict[str, str] = {}


def redis_channel() -> str:
    """The policy-version channel: `gateway:policy-version:<db>`, the database number of REDIS_URL. Redis
    pub/sub ignores database numbers, so without it gateways sharing a Redis server on different databases
    (several deployments, or test runs) would receive each other's bumps and flush their caches for them."""
    url = settings.REDIS_URL or ""
    channel = _channels.get(url)
    if channel is None:
        from redis.connection import parse_url

        db = parse_url(url).get("db", 0) if url else 0
        channel = _channels[url] = f"gateway:policy-version:{db}"
    return channel


def __getattr__(name: str) -> str:
    if name == "REDIS_CHANNEL":  # the channel of the current REDIS_URL (tests and policy_cache import this name)
        return redis_channel()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def version_model():
    """The model of the version rows (fields `name`, primary key, and `version`): GATEWAY_POLICY_VERSION_MODEL."""
    return apps.get_model(settings.GATEWAY_POLICY_VERSION_MODEL, require_ready=False)


GLOBAL = "policy"
KEYS = "keys"
ORG_PREFIX = "org:"


def org_scope(organization_id) -> str:
    return f"{ORG_PREFIX}{organization_id}"


class LocalVersion:
    """This process's global policy version: moves whenever a global change is seen (or may have happened)."""

    def __init__(self) -> None:
        self.value = 1
        self._lock = threading.Lock()

    def move(self) -> int:
        with self._lock:
            self.value += 1
            return self.value

    def reset(self) -> None:
        """Forget what was seen (tests: the database or Redis was reset under the process)."""
        rows.forget()
        self.move()


local_version = LocalVersion()
_scope_hooks: list[Callable[[str], None]] = []


def on_scope_change(hook: Callable[[str], None]) -> None:
    """Call `hook(scope)` whenever a non-global scope changes (PolicyCache drops that scope's entries)."""
    _scope_hooks.append(hook)


def apply_change(scope: str) -> None:
    """A change of `scope` was seen (pushed, read from the rows, or made here)."""
    if scope == GLOBAL:
        local_version.move()
        return
    for hook in _scope_hooks:
        hook(scope)


class VersionRows:
    """The version rows as last read by this process (used while no push can arrive)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] | None = None
        self.read_at = float("-inf")

    def forget(self) -> None:
        self.seen = None
        self.read_at = float("-inf")

    def refresh(self) -> None:
        """Read every row (sync) and apply those that changed since the last read."""
        model = version_model()
        current = dict(model.objects.values_list("name", "version"))
        seen, self.seen = self.seen, current
        if seen is None:  # nothing known: everything may have changed
            local_version.move()
            return
        for name, version in current.items():
            if seen.get(name) != version:
                apply_change(name)


rows = VersionRows()
_refresh_async = db_reader(rows.refresh)


async def current_policy_version() -> int:
    """This process's policy version for one request (see the module's docstring for how it stays current)."""
    now = time.monotonic()
    interval = settings.GATEWAY_POLICY_REFRESH_MS
    if settings.REDIS_URL:
        if listener.subscribed:
            interval = settings.GATEWAY_POLICY_RECHECK_MS  # a safety net for a push that never came
        else:
            listener.ensure_started()
    if now - rows.read_at >= interval / 1000:
        await _refresh_async()
        rows.read_at = now
    return local_version.value


def _bump_rows(scopes: Iterable[str]) -> None:
    model = version_model()
    for scope in scopes:
        if not model.objects.filter(name=scope).update(version=F("version") + 1):
            model.objects.get_or_create(name=scope, defaults={"version": 1})


def bump_policy_versions(scopes: Iterable[str] = (GLOBAL,)) -> None:
    """Bump the rows of `scopes` now (inside the caller's transaction) and tell every process once it commits."""
    scopes = tuple(dict.fromkeys(scopes))
    _bump_rows(scopes)
    transaction.on_commit(lambda: _announce(scopes), robust=True)


def bump_policy_version() -> None:
    """Bump the global version now and announce it at once, not waiting for a commit (operators, tests)."""
    _bump_rows((GLOBAL,))
    _announce((GLOBAL,))


def bump_policy_version_on_commit(scopes: Iterable[str] = (GLOBAL,)) -> None:
    """Kept for callers outside a model signal: the same as `bump_policy_versions`."""
    bump_policy_versions(scopes)


def _announce(scopes: tuple[str, ...]) -> None:
    for scope in scopes:
        apply_change(scope)  # this process at once
    if not settings.REDIS_URL:
        return
    if listener.started and not listener.subscribed:
        publisher.queue(scopes)  # Redis is down: no wait here; the listener pushes them once it is back
    elif not publisher.publish(scopes):
        listener.ensure_started()  # the thread that retries the push


def read_policy_version() -> int:
    """The global version row (sync)."""
    model = version_model()
    row = model.objects.filter(name=GLOBAL).values_list("version", flat=True).first()
    return int(row or 0)


class Publisher:
    """PUBLISHes scopes; what Redis refused is kept and sent again by the listener thread."""

    def __init__(self) -> None:
        self.missed: dict[str, None] = {}
        self._lock = threading.Lock()
        self._client = None

    def client(self):
        if self._client is None:
            self._client = sync_client(settings.REDIS_URL, settings.GATEWAY_REDIS_TIMEOUT_SECONDS)
        return self._client

    def queue(self, scopes: Iterable[str]) -> None:
        with self._lock:
            self.missed.update(dict.fromkeys(scopes))

    def publish(self, scopes: Iterable[str]) -> bool:
        self.queue(scopes)
        with self._lock:
            pending = list(self.missed)
        try:
            for scope in pending:
                self.client().publish(redis_channel(), scope)
                with self._lock:
                    self.missed.pop(scope, None)
            return True
        except Exception as error:
            logger.warning("policy version push failed (%s); %d scopes will be pushed again", error, len(pending))
            return False

    def retry(self) -> None:
        if self.missed:
            self.publish(())


publisher = Publisher()


def redis_client():
    """The process's shared synchronous Redis client (timeouts: GATEWAY_REDIS_TIMEOUT_SECONDS)."""
    return publisher.client()


class PolicyVersionListener:
    """A daemon thread subscribed to the policy-version channel; `subscribed` is True while pushes arrive."""

    def __init__(self) -> None:
        self.subscribed = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._stop = threading.Event()

    @property
    def started(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def ensure_started(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop = stop = threading.Event()  # each thread has its own: a stopped one may still be ending
                self._thread = threading.Thread(
                    target=self._run, args=(stop,), name="gateway-policy-listener", daemon=True
                )
                self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        """Unsubscribe and end the thread (requests read the version rows until it starts again)."""
        with self._start_lock:
            self._stop.set()
            self.subscribed = False
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _mark(self, stop: threading.Event, subscribed: bool) -> None:
        if stop is self._stop and not (subscribed and stop.is_set()):
            self.subscribed = subscribed

    def _run(self, stop: threading.Event) -> None:
        delay = 0.1
        while not stop.is_set():
            try:
                self._listen(stop)
                delay = 0.1
            except Exception as error:  # Redis restarted or unreachable: requests read the rows meanwhile
                if self.subscribed and stop is self._stop:
                    logger.warning("policy version listener lost Redis (%s); reading the version rows", error)
                self._mark(stop, False)
                stop.wait(delay)
                delay = min(delay * 2, 2.0)

    def _listen(self, stop: threading.Event) -> None:
        timeout = settings.GATEWAY_REDIS_TIMEOUT_SECONDS
        # The health check PINGs every few seconds; its answer is read within the timeout, so a black-holed
        # connection is noticed (and the rows read instead) rather than waited on forever.
        client = sync_client(settings.REDIS_URL, timeout, health_check_interval=2, socket_keepalive=True)
        pubsub = client.pubsub()
        try:
            pubsub.subscribe(redis_channel())
            confirmed = None
            while confirmed is None or confirmed.get("type") != "subscribe":
                if stop.is_set():
                    return
                confirmed = pubsub.get_message(timeout=1.0)
            local_version.move()  # pushes may have been missed while not subscribed: everything may have changed
            self._mark(stop, True)
            publisher.retry()
            while not stop.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "message":
                    apply_change(message["data"].decode())
                publisher.retry()
        finally:
            self._mark(stop, False)
            try:
                pubsub.close()
                client.close()
            except Exception:
                pass


listener = PolicyVersionListener()
