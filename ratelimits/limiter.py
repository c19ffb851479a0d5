"""Where a check runs: Redis when `REDIS_URL` is set and answering, the database otherwise.

A Redis error (refused connection, time-out after `GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS`, a restart) sends the
check to the database instead of failing the request, and this process keeps using the database for
`GATEWAY_RATE_LIMIT_REDIS_RETRY_MS` before it tries Redis again. The two stores do not share their windows:
in the minute a process switches, entries admitted in one store are not seen by the other.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from django.conf import settings

from gateway_project.api.errors import GatewayError
from gateway_project.db_thread import in_db_thread
from gateway_project.group_commit import GroupCommit
from ratelimits import db_store, redis_store
from ratelimits.limits import Decision, RateLimit

logger = logging.getLogger("gateway.ratelimits")

_db_check = in_db_thread(db_store.check)
_db_settle_many = in_db_thread(db_store.settle_many)


def _settle_failed(item: db_store.Settlement) -> None:
    logger.warning("rate limits: settling request %s (%s tokens) failed", item.request_id, item.tokens)


async def _settle_one(item: db_store.Settlement) -> None:
    await _db_settle_many([item])


# Settlements of requests that finish together share one transaction (no waiting: those finishing while a batch
# is written share the next one), on the data plane's database thread like the checks.
_db_settler: GroupCommit[db_store.Settlement] = GroupCommit(
    write_batch=_db_settle_many, write_one=_settle_one, flush_ms=lambda: 0, on_failure=_settle_failed
)


class _RedisHealth:
    """When this process may try Redis again after a failure."""

    retry_at = 0.0

    def usable(self) -> bool:
        return bool(settings.GATEWAY_RATE_LIMIT_REDIS_URL) and time.monotonic() >= self.retry_at

    def failed(self, error: BaseException) -> None:
        if time.monotonic() >= self.retry_at:
            logger.warning("rate limits: Redis failed (%s: %s); using the database", type(error).__name__, error)
        self.retry_at = time.monotonic() + settings.GATEWAY_RATE_LIMIT_REDIS_RETRY_MS / 1000

    def reset(self) -> None:
        self.retry_at = 0.0


redis_health = _RedisHealth()


def _redis_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError, asyncio.TimeoutError)


_REDIS_ERRORS = _redis_errors()


# How many leases a request waits for (each asked by another request of this process, its slots taken by those
# that waited before) before it asks Redis itself.
LEASE_WAITS = 3


async def check(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """Admit the request in every scope or none, in Redis or, when Redis is off or failing, in the database.

    The Redis check is awaited as it is (no task): once its command is queued, cancelling the caller does not
    unsend it. A request of a key with an open lease in this process takes a slot from it; one arriving while a
    lease is asked for waits for its reply (ratelimits/redis_leases.py). The database check runs to its end in a
    task of its own if the caller is cancelled meanwhile."""
    if redis_health.usable():
        for waits in range(LEASE_WAITS + 1):
            decision = redis_store.admit_from_lease(limits, tokens)
            if decision is not None:
                return decision
            asked = redis_store.lease_asked(limits)
            if asked is None or waits == LEASE_WAITS:  # a slot is tried after the last wait too
                break
            # wait for the reply of the lease this process asked (not cancelled with this caller), then take a slot
            await asyncio.wait((asked,))
    if redis_health.usable():  # again: the lease's check may have failed meanwhile
        try:
            decision = await redis_store.check(limits, request_id, tokens)
        except _REDIS_ERRORS as error:
            redis_health.failed(error)
        else:
            _note_room(limits, decision)
            return decision
    if settings.GATEWAY_RATE_LIMIT_REDIS_URL:  # configured, but this process cannot reach it now
        return await without_redis(limits, request_id, tokens)
    return await asyncio.shield(_db_check(limits, request_id, tokens))


# What a process that cannot reach the rate-limit Redis does (GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE; docs/rate-limits.md,
# "When Redis fails"): other processes may still count in Redis, and the two stores keep separate windows.
ON_REDIS_FAILURE = ("database", "fail_closed", "fail_open")
# A decision of `fail_open`: admitted without being counted anywhere (nothing to settle).
UNCOUNTED = "none"


async def without_redis(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """`database`: counted in the database's window (a split deployment admits up to the limit in each store);
    `fail_closed`: 503 with Retry-After (the limit holds across the split; nothing is served without Redis);
    `fail_open`: admitted uncounted (nothing is refused by rate limits while Redis is unreachable)."""
    mode = settings.GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE
    if mode == "fail_closed":
        retry = max(1, math.ceil(settings.GATEWAY_RATE_LIMIT_REDIS_RETRY_MS / 1000))
        raise GatewayError(
            503,
            "Service temporarily unavailable: the rate limits cannot be checked (their Redis cannot be reached), "
            "retry shortly",
            headers={"Retry-After": str(retry)},
        )
    if mode == "fail_open":
        return Decision(admitted=True, states=[], tokens=tokens, store=UNCOUNTED)
    return await asyncio.shield(_db_check(limits, request_id, tokens))


# id(limits) -> whether the last Redis decision for these limits left room for one more request like it (the
# list is the one limits_of caches per key and workspace limits). Only a hint: it decides whether `start` sends
# the check ahead, never whether a request is admitted.
_room: dict[int, bool] = {}


def _note_room(limits: list[RateLimit], decision: Decision) -> None:
    room = decision.admitted
    if room:
        for state in decision.states:
            limit = state.limit
            if limit.requests_per_minute and limit.requests_per_minute - state.requests < 2:
                room = False
                break
            if limit.tokens_per_minute and limit.tokens_per_minute - state.tokens < decision.tokens:
                room = False
                break
    if len(_room) > 10_000:
        _room.clear()
    _room[id(limits)] = room


class PendingDecision:
    """A Redis check sent ahead (`start`): `result()` awaits its reply once and keeps the decision; a Redis error
    sends the check to the database, as `check` does."""

    __slots__ = ("decision", "request_id", "sent")

    def __init__(self, sent: redis_store.SentCheck | None, request_id: str, decision: Decision | None = None) -> None:
        self.sent = sent  # None: decided already (admitted from a lease)
        self.request_id = request_id
        self.decision = decision

    async def result(self) -> Decision:
        decision = self.decision
        if decision is None:
            sent = self.sent
            assert sent is not None
            try:
                decision = await redis_store.finish_check(sent)
            except _REDIS_ERRORS as error:
                redis_health.failed(error)
                decision = await without_redis(sent.limits, self.request_id, sent.tokens)
            else:
                _note_room(sent.limits, decision)
            self.decision = decision
        return decision

    def abandon(self) -> None:
        """The request went away before the decision was awaited (an entry it admitted stays held, the safe side)."""
        if self.decision is None and self.sent is not None:
            self.sent.abandon()


def start(limits: list[RateLimit], request_id: str, tokens: int) -> PendingDecision | None:
    """Send the Redis check without awaiting its reply, so that the request's next steps (the budget hold) run
    while it travels; None when it must be awaited first (`check`): Redis off or failing, or the last decision
    for these limits left no room for another request (a refused request then takes no budget hold: a flood past
    the limit costs one Redis call a request, as before)."""
    if not _room.get(id(limits)) or not redis_health.usable():
        return None
    decision = redis_store.admit_from_lease(limits, tokens)
    if decision is not None:
        return PendingDecision(None, request_id, decision)
    if redis_store.lease_asked(limits) is not None:
        return None  # `check` waits for that lease
    return PendingDecision(redis_store.send_check(limits, request_id, tokens), request_id)


async def settle(decision: Decision, limits: list[RateLimit], request_id: str, tokens: int) -> None:
    """Replace the request's held tokens by its actual usage, in the store that admitted it (errors are logged)."""
    try:
        if decision.store == UNCOUNTED:
            return
        if decision.store == "redis":
            await redis_store.settle(limits, request_id, tokens, decision)
        else:
            keys = tuple(sorted({limit.key for limit in limits}))
            await _db_settler.submit(db_store.Settlement(keys, request_id, tokens, decision.tokens))
    except Exception as error:  # Redis or the database went away meanwhile: the hold stays (the safe side)
        _log_settle_failure(request_id, tokens, error)


def _log_settle_failure(request_id: str, tokens: int, error: BaseException) -> None:
    logger.warning(
        "rate limits: settling request %s (%s tokens) failed: %s: %s",
        request_id,
        tokens,
        type(error).__name__,
        error,
    )


_settling: set[asyncio.Task] = set()  # settlements running as tasks (a reference keeps each alive)


def _settle_in_task(decision: Decision, limits: list[RateLimit], request_id: str, tokens: int) -> asyncio.Task:
    task = asyncio.get_running_loop().create_task(settle(decision, limits, request_id, tokens))
    _settling.add(task)
    task.add_done_callback(_settling.discard)
    return task


def settle_soon(decision: Decision, limits: list[RateLimit], request_id: str, tokens: int) -> asyncio.Task | None:
    """`settle` without waiting for it. In Redis: nothing when the request used what it held, in its lease when it
    was admitted from a lease of this process whose time is not up (ratelimits/redis_leases.py), else carried by
    this process's next check (ratelimits/redis_store.py), not awaited (a failure is logged; the hold stays,
    the safe side). Otherwise (database) `settle` in a task, returned for the caller to await."""
    if decision.store == UNCOUNTED:
        return None
    if decision.store == "redis":
        if tokens == decision.tokens or redis_store.settle_in_lease(tokens, decision):
            return None

        def failed(error: Exception) -> None:
            _log_settle_failure(request_id, tokens, error)

        if redis_store.settle_later(limits, request_id, tokens, decision, failed):
            return None
    return _settle_in_task(decision, limits, request_id, tokens)
