"""The Redis path of rate limiting: one Lua script per check (atomic across every process using the Redis).

The keys and the scripts: ratelimits/redis_scripts.py.

Settlements (a request's held tokens replaced by its usage) are not sent on their own when another check
follows soon: the process's next check carries them, first thing in its script (so that check already sees
the freed tokens); those no check took within `SETTLE_DELAY_MS` go alone (one script for all that are
waiting). One round trip per request while requests keep coming, fewer while a key is busy and far from its
limits: a check then asks for a lease of several slots (ratelimits/redis_leases.py).

The client is redis-py's asyncio client (hiredis parser; commands packed by hiredis and pooled connections
checked without a read: gateway_project/redis_clients.py), one connection pool per event loop, the two scripts
registered with it (EVALSHA; a server that forgot them gets them again from the library on NOSCRIPT). A command
waits at most GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS to connect and as long for its reply, and is not retried: a
Redis error goes to the caller at once (ratelimits/limiter.py then falls back, GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import redis.asyncio as aioredis
from django.conf import settings

from gateway_project.redis_clients import async_client
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState
from ratelimits.redis_leases import Leases
from ratelimits.redis_scripts import CHECK, SETTLE

# How long a settlement may wait for the next check of its process to carry it (then it is sent on its own).
# Tokens stay held that much longer at most: nothing next to a one-minute window.
SETTLE_DELAY_MS = 20

logger = logging.getLogger("gateway.ratelimits")

_clients: dict[int, Any] = {}


class _Plan:
    """What does not change between checks of one set of limits: the script's keys and fixed arguments."""

    __slots__ = ("check_keys", "check_tail", "keys", "limits", "settle_keys", "slots_index")

    def __init__(self, limits: list[RateLimit]) -> None:
        self.limits = limits
        self.keys = []
        for limit in limits:
            self.keys += [f"gateway:rl:{limit.key}:log", f"gateway:rl:{limit.key}:tokens"]
        self.check_keys = tuple(self.keys)
        self.settle_keys = tuple(f"gateway:rl:{limit.key}:tokens" for limit in limits)
        self.check_tail = (
            len(limits),
            *(v for limit in limits for v in (limit.requests_per_minute or 0, limit.tokens_per_minute or 0)),
        )
        self.slots_index = 4 + 2 * len(limits)  # where the check's arguments say how many slots it asks for


_plans: dict[int, _Plan] = {}


def _plan(limits: list[RateLimit]) -> _Plan:
    """The plan of `limits` (cached by identity: limits_of returns the same list for an unchanged key)."""
    plan = _plans.get(id(limits))
    if plan is None or plan.limits is not limits:
        if len(_plans) > 4096:
            _plans.clear()
        plan = _plans[id(limits)] = _Plan(limits)
    return plan


class _Unsettled:
    """Items of one event loop's client (settlements, leases' ends) waiting for the next check to carry them (or
    for the timer). Settlements of one lease's requests waiting together are one item (their differences added)."""

    __slots__ = ("items", "leased", "sending", "settle_script", "timer")

    def __init__(self, settle_script) -> None:
        self.settle_script = settle_script
        self.items: list[list] = []  # [keys, arguments, [on_error, ...]]
        self.leased: dict[tuple, list] = {}  # (lease, keys) -> its waiting 'd' item
        self.timer: asyncio.TimerHandle | None = None
        self.sending: set[asyncio.Task] = set()  # settle scripts sent alone whose reply is not in yet

    def add(self, keys: tuple[str, ...], args: tuple, on_error: Callable[[Exception], None]) -> None:
        """Queue an item: its keys and its five arguments (see _SETTLE_LUA)."""
        if args[0] == "d":
            waiting = self.leased.get((args[2], keys))
            if waiting is not None:
                kind, count, member, change, _ = waiting[1]
                waiting[1] = (kind, count, member, change + args[3], 0)
                waiting[2].append(on_error)
                return
            item = self.leased[(args[2], keys)] = [keys, args, [on_error]]
        else:
            item = [keys, args, [on_error]]
        self.items.append(item)
        if self.timer is None:  # not cancelled when a check takes the items: one timer per SETTLE_DELAY_MS at most
            self.timer = asyncio.get_running_loop().call_later(SETTLE_DELAY_MS / 1000, self.send_alone)

    def take(self) -> tuple[tuple, tuple, list]:
        """(keys, arguments, items) of the waiting items, no longer waiting."""
        items, self.items = self.items, []
        self.leased.clear()
        keys: tuple = ()
        args: tuple = ()
        for item_keys, item_args, _ in items:
            keys += item_keys
            args += item_args
        return keys, args, items

    def send_alone(self) -> None:
        """The items no check carried since the timer was armed (at most SETTLE_DELAY_MS ago): one settle script
        for all, in a task (its failure goes to the items' callbacks)."""
        self.timer = None
        if not self.items:
            return
        keys, args, items = self.take()
        task = asyncio.ensure_future(self.settle_script(keys=keys, args=args))
        self.sending.add(task)
        task.add_done_callback(partial(self._sent, items))

    def _sent(self, items: list, task: asyncio.Task) -> None:
        self.sending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _failed(items)(task.exception())


def _failed(items: list) -> Callable[[Exception], None]:
    """Hands an error to every item's callbacks."""

    def failed(error: Exception) -> None:
        for _, _, callbacks in items:
            for on_error in callbacks:
                on_error(error)

    return failed


_unsettled: dict[int, _Unsettled] = {}
_leases: dict[int, Leases] = {}


def _client(url: str) -> aioredis.Redis:
    """redis-py's asyncio client of `url` with its own connection pool: a command waits at most the configured
    time to connect and for its reply, and is not retried (the caller falls back at once:
    gateway_project/redis_clients.py)."""
    return async_client(url, settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS / 1000)


def _scripts():
    """(client, check script, settle script) of the running event loop (a client cannot be shared between loops);
    the scripts are redis-py's registered scripts: awaitables `script(keys=..., args=...)`."""
    loop = asyncio.get_running_loop()
    loop_id = id(loop)
    entry = _clients.get(loop_id)
    if entry is None:
        if len(_clients) > 64:  # event loops of finished test servers
            _clients.clear()
            _unsettled.clear()
            _leases.clear()
        client = _client(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
        entry = (client, client.register_script(CHECK), client.register_script(SETTLE))
        unsettled = _unsettled[loop_id] = _Unsettled(entry[2])
        _leases[loop_id] = Leases(loop, _lease_queue(unsettled))
        _clients[loop_id] = entry
    return entry


class SentCheck:
    """A check sent in a task of its own whose reply is not awaited yet (`send_check`)."""

    __slots__ = ("carried", "future", "limits", "plan", "request_id", "slots", "tokens")

    def __init__(self, future, plan, request_id, tokens, slots, carried) -> None:
        self.future, self.plan, self.limits = future, plan, plan.limits
        self.request_id, self.tokens, self.slots = request_id, tokens, slots
        self.carried = carried

    def abandon(self) -> None:
        """Nobody will await the reply (the request went away): the check runs to its end all the same (an entry
        it admitted stays held at its estimate until it leaves the window, the safe side; a lease it was granted
        is opened and ends as any other), and its error, if any, goes to the items it carried."""
        self.future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: not logged as never retrieved (the carried items had it already)


async def _run_check(script, keys: tuple, args: tuple, carried: list):
    """The check script's reply; an error goes to the items it carried (logged; holds stay) and to the caller."""
    try:
        return await script(keys=keys, args=args)
    except Exception as error:
        if carried:
            _failed(carried)(error)
        raise


def admit_from_lease(limits: list[RateLimit], tokens: int) -> Decision | None:
    """The decision of a request admitted from this process's open lease of `limits`, or None (check in Redis)."""
    leases = _leases.get(id(asyncio.get_running_loop()))
    if leases is None or not leases.open:
        return None
    return leases.admit(_plan(limits), tokens)


def lease_asked(limits: list[RateLimit]) -> asyncio.Future | None:
    """The reply of the check asking a lease of `limits` in this process, while it is not in (else None): a request
    that waits for it and then takes a slot (`admit_from_lease`) spares Redis a check and waits no longer."""
    leases = _leases.get(id(asyncio.get_running_loop()))
    return None if leases is None else leases.waiting_for(_plan(limits))


def send_check(limits: list[RateLimit], request_id: str, tokens: int) -> SentCheck:
    """Send the check (with the items waiting in this process) in a task and return at once (`finish_check` awaits
    its reply). While the key is busy, the check asks for a lease (ratelimits/redis_leases.py)."""
    return _send(*_prepare(limits, request_id, tokens))


def _prepare(limits: list[RateLimit], request_id: str, tokens: int) -> tuple:
    """(script, plan, request id, tokens, slots asked, keys, arguments, carried items) of a check."""
    _, script, _ = _scripts()
    plan = _plan(limits)
    lease_ms = settings.GATEWAY_RATE_LIMIT_LEASE_MS
    slots = _leases[id(asyncio.get_running_loop())].slots_to_ask(plan, lease_ms)
    return (script, plan, request_id, tokens, slots, *_check_command(plan, request_id, tokens, slots, lease_ms))


def _send(script, plan: _Plan, request_id: str, tokens: int, slots: int, keys, args, carried) -> SentCheck:
    future = asyncio.ensure_future(_run_check(script, keys, args, carried))
    if slots > 1:  # before the caller awaits it: the lease opens first, even if the caller went away
        leases = _leases[id(asyncio.get_running_loop())]
        deadline = leases.loop.time() + settings.GATEWAY_RATE_LIMIT_LEASE_MS / 1000
        future.add_done_callback(partial(leases.replied, plan, request_id, tokens, deadline))
        leases.asked(plan, future)
    return SentCheck(future, plan, request_id, tokens, slots, carried)


def _check_command(plan: _Plan, request_id: str, tokens: int, slots: int, lease_ms: int) -> tuple[tuple, tuple, list]:
    """(keys, arguments, carried items) of the check script: the check of the plan's limits with the items
    waiting in this process, which are no longer waiting."""
    unsettled = _unsettled.get(id(asyncio.get_running_loop()))
    extra_keys, extra_args, carried = unsettled.take() if unsettled is not None and unsettled.items else ((), (), [])
    keys = plan.check_keys + extra_keys if extra_keys else plan.check_keys
    return keys, (WINDOW_MS, request_id, tokens, *plan.check_tail, slots, lease_ms, *extra_args), carried


async def finish_check(sent: SentCheck) -> Decision:
    """The decision of a sent check; raises redis errors as they come (the items it carried had them already).

    A caller cancelled meanwhile does not cancel the check asking a lease (its lease, if granted, is opened and
    ended); it cancels a check of one slot, whose entry stays held at its estimate (the safe side)."""
    if sent.slots > 1:
        try:
            result = await asyncio.shield(sent.future)
        except asyncio.CancelledError:
            sent.abandon()
            raise
    else:
        result = await sent.future
    return _decision(sent.limits, result, sent.request_id, sent.tokens)


async def check(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """Admit the request in every scope or in none (one EVALSHA, which also carries the items waiting in this
    process); raises redis errors as they come. While the key is busy the check asks for a lease, in a task (a
    caller gone meanwhile leaves it to open and end as any other); otherwise a caller cancelled meanwhile may
    leave an entry it admitted held at its estimate until it leaves the window (the safe side). Requests
    admitted from a lease do not come here (`admit_from_lease`)."""
    script, plan, request_id, tokens, slots, keys, args, carried = prepared = _prepare(limits, request_id, tokens)
    if slots > 1:
        return await finish_check(_send(*prepared))
    return _decision(limits, await _run_check(script, keys, args, carried), request_id, tokens)


def _decision(limits: list[RateLimit], result: list, request_id: str, tokens: int) -> Decision:
    refused = result[0]
    states = [
        ScopeState(limit, result[3 + 3 * i], result[4 + 3 * i], result[5 + 3 * i]) for i, limit in enumerate(limits)
    ]
    if not refused:
        slots = result[-1]
        if slots < 2:
            return Decision(True, states, None, "", 0, tokens, "redis")
        # the first request of a lease: the window without the lease's other slots and their tokens
        unused = slots - 1
        states = [ScopeState(s.limit, s.requests - unused, s.tokens - unused * tokens, s.reset_ms) for s in states]
        return Decision(True, states, None, "", 0, tokens, "redis", lease=request_id)
    dimension = result[1]
    return Decision(
        admitted=False,
        states=states,
        refused=limits[refused - 1],
        dimension=dimension.decode() if isinstance(dimension, bytes) else dimension,
        retry_after_ms=int(result[2]),
        tokens=tokens,
        store="redis",
    )


def _settlement(limits: list[RateLimit], request_id: str, tokens: int, decision: Decision | None):
    """(keys, arguments) of the item settling a request: its held tokens become `tokens` (a request admitted from a
    lease: the difference is added to the lease's)."""
    keys = _plan(limits).settle_keys
    if decision is not None and decision.lease:
        return keys, ("d", len(keys), decision.lease, tokens - decision.tokens, 0)
    return keys, ("s", len(keys), request_id, tokens, 0)


async def send_item(keys: tuple, args: tuple) -> None:
    """Run one item (settlement, a lease's end) on its own, now."""
    _, _, script = _scripts()
    await script(keys=keys, args=args)


async def settle(limits: list[RateLimit], request_id: str, tokens: int, decision: Decision | None = None) -> None:
    """Replace the request's held tokens by `tokens` in every scope whose window still holds it (now)."""
    await send_item(*_settlement(limits, request_id, tokens, decision))


def settle_in_lease(tokens: int, decision: Decision) -> bool:
    """Settle a request admitted from a lease whose time is not up yet, in the lease (nothing sent:
    ratelimits/redis_leases.py); False when the request had no lease or its lease has ended."""
    if not decision.lease:
        return False
    leases = _leases.get(id(asyncio.get_running_loop()))
    return leases is not None and leases.settle(decision.lease, tokens - decision.tokens)


def settle_later(
    limits: list[RateLimit], request_id: str, tokens: int, decision: Decision, on_error: Callable[[Exception], None]
) -> bool:
    """`settle`, carried by this process's next check (or sent alone after `SETTLE_DELAY_MS`), not awaited;
    `on_error(exception)` gets a failure (logged: the hold stays, the safe side). Always True."""
    _scripts()
    keys, args = _settlement(limits, request_id, tokens, decision)
    _unsettled[id(asyncio.get_running_loop())].add(keys, args, on_error)
    return True


def _lease_queue(unsettled: _Unsettled) -> Callable[[tuple, tuple], None]:
    def queue(keys: tuple, args: tuple) -> None:
        unsettled.add(keys, args, _log_lease_end_failure)

    return queue


def _log_lease_end_failure(error: BaseException) -> None:
    """A lease's end (returning its unused slots or tokens) failed: they stay held until they leave the window (the
    safe side)."""
    name = type(error).__name__
    logger.warning("rate limits: ending a lease failed (its unused slots stay held): %s: %s", name, error)
