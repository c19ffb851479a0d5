"""The Redis path of rate limiting: one Lua script per check (atomic across every process using the Redis).

The keys and the scripts: ratelimits/redis_scripts.py.

Settlements (a request's held tokens replaced by its usage) are not sent on their own when another check
follows soon: the process's next check carries them, first thing in its script (so that check already sees
the freed tokens); those no check took within `SETTLE_DELAY_MS` go alone (one script for all that are
waiting). One round trip per request while requests keep coming, fewer while a key is busy and far from its
limits: a check then asks for a lease of several slots (ratelimits/redis_leases.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError

from gateway_project import fast_redis
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState
from ratelimits.redis_leases import Leases
from ratelimits.redis_scripts import CHECK, CHECK_SHA, SETTLE, SETTLE_SHA

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

    __slots__ = ("client", "items", "leased", "timer")

    def __init__(self, client: fast_redis.FastRedis) -> None:
        self.client = client
        self.items: list[list] = []  # [keys, arguments, [on_error, ...]]
        self.leased: dict[tuple, list] = {}  # (lease, keys) -> its waiting 'd' item
        self.timer: asyncio.TimerHandle | None = None

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
        for all."""
        self.timer = None
        if not self.items:
            return
        keys, args, items = self.take()
        sent = self.client.send_nowait(("EVALSHA", SETTLE_SHA, len(keys), *keys, *args), _failed(items))
        if not sent:  # the connection closed meanwhile: each on its own in a task (errors are logged)
            _failed(items)(None)


class Resend(Exception):
    """Given to an item's `on_error` when it was not sent: send it again, on its own (`send_item`; NOSCRIPT too).
    `keys` and `args` are the item as queued (settlements of one lease may have been added together)."""

    def __init__(self, keys: tuple[str, ...], args: tuple) -> None:
        super().__init__("not sent")
        self.keys, self.args = keys, args


def _failed(items: list) -> Callable[[Exception | None], None]:
    """Hands an error to every item's callbacks (None: the items were not sent; each gets a `Resend`)."""

    def failed(error: Exception | None) -> None:
        for keys, args, callbacks in items:
            for on_error in callbacks:
                on_error(Resend(keys, args) if error is None else error)

    return failed


_unsettled: dict[int, _Unsettled] = {}
_leases: dict[int, Leases] = {}


def _scripts():
    """(client, check script, settle script) of the running event loop (a client cannot be shared between loops).

    The scripts are awaitables `script(keys=..., args=...)`: on a plain `redis://` or `unix://` URL they run on
    the data plane's lean pipelined client (gateway_project/fast_redis.py, about a fifth of redis-py's CPU per
    call), on other URLs (TLS) on redis-py."""
    loop_id = id(asyncio.get_running_loop())
    entry = _clients.get(loop_id)
    if entry is None:
        if len(_clients) > 64:  # event loops of finished test servers
            _clients.clear()
            _unsettled.clear()
            _leases.clear()
        timeout = settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS / 1000
        url = settings.GATEWAY_RATE_LIMIT_REDIS_URL
        if fast_redis.supports(url):
            client = fast_redis.FastRedis(url, timeout=timeout)
            entry = (client, _fast_script(client, CHECK), _fast_script(client, SETTLE))
            unsettled = _unsettled[loop_id] = _Unsettled(client)
            _leases[loop_id] = Leases(asyncio.get_running_loop(), _lease_queue(unsettled))
        else:
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            entry = (client, client.register_script(CHECK), client.register_script(SETTLE))
        _clients[loop_id] = entry
    return entry


def _fast_script(client: fast_redis.FastRedis, source: str):
    sha = client.script(source)

    def run(keys: list[str], args: list[Any]):
        return client.evalsha(sha, keys, args)

    return run


class SentCheck:
    """A check queued on the lean client's open connection whose reply is not awaited yet (`send_check`)."""

    __slots__ = ("args", "carried", "client", "future", "keys", "limits", "plan", "request_id", "tokens")

    def __init__(self, client, future, plan, request_id, tokens, keys, args, carried) -> None:
        self.client, self.future, self.plan, self.limits = client, future, plan, plan.limits
        self.request_id, self.tokens = request_id, tokens
        self.keys, self.args, self.carried = keys, args, carried

    def abandon(self) -> None:
        """Nobody will await the reply (the request went away): its error, if any, is not logged as unretrieved,
        and the items it carried are sent again on their own if the script was not run (NOSCRIPT). An entry it
        admitted stays held at its estimate until it leaves the window (the safe side); a lease it was granted is
        opened and ends as any other (its reply's callback)."""
        carried = self.carried

        def retrieve(future: asyncio.Future) -> None:
            if future.cancelled():
                return
            error = future.exception()
            if carried and isinstance(error, NoScriptError):
                _failed(carried)(error)

        self.future.add_done_callback(retrieve)


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


def send_check(limits: list[RateLimit], request_id: str, tokens: int) -> SentCheck | None:
    """Queue the check (with the items waiting in this process) on the lean client's open connection and return
    at once; None when there is no open lean connection (TLS client, not connected yet): use `check`. While the
    key is busy, the check asks for a lease (ratelimits/redis_leases.py)."""
    client, _, _ = _scripts()
    if not isinstance(client, fast_redis.FastRedis) or not client.is_open():
        return None
    plan = _plan(limits)
    leases = _leases[id(asyncio.get_running_loop())]
    lease_ms = settings.GATEWAY_RATE_LIMIT_LEASE_MS
    slots = leases.slots_to_ask(plan, lease_ms)
    keys, args, carried = _check_command(plan, request_id, tokens, slots, lease_ms)
    future = client.send("EVALSHA", CHECK_SHA, len(keys), *keys, *args)
    if slots > 1:  # before the caller awaits it: the lease opens first, even if the caller went away
        deadline = leases.loop.time() + lease_ms / 1000
        future.add_done_callback(partial(leases.replied, plan, request_id, tokens, deadline))
        leases.asked(plan, future)
    return SentCheck(client, future, plan, request_id, tokens, keys, args, carried)


def _check_command(plan: _Plan, request_id: str, tokens: int, slots: int, lease_ms: int) -> tuple[tuple, tuple, list]:
    """(keys, arguments, carried items) of the check script on the lean client: the check of the plan's limits
    with the items waiting in this process, which are no longer waiting."""
    unsettled = _unsettled.get(id(asyncio.get_running_loop()))
    extra_keys, extra_args, carried = unsettled.take() if unsettled is not None and unsettled.items else ((), (), [])
    keys = plan.check_keys + extra_keys if extra_keys else plan.check_keys
    return keys, (WINDOW_MS, request_id, tokens, *plan.check_tail, slots, lease_ms, *extra_args), carried


async def finish_check(sent: SentCheck) -> Decision:
    """The decision of a sent check (its reply awaited as one future); raises redis errors as they come, after
    reporting them to the items it carried (logged; holds stay)."""
    keys, args = sent.keys, sent.args
    try:
        try:
            if args[sent.plan.slots_index] > 1:
                # it asks for a lease: shielded, so that a caller cancelled meanwhile does not cancel the reply (its
                # lease, if granted, is opened and ended; its carried items are sent again if the script was not run)
                try:
                    result = await asyncio.shield(sent.future)
                except asyncio.CancelledError:
                    sent.abandon()
                    raise
            else:  # a caller cancelled meanwhile cancels the reply: its entry stays held (the safe side)
                result = await sent.future
        except NoScriptError:  # the server forgot the script (restart, SCRIPT FLUSH): EVAL loads it again
            if args[sent.plan.slots_index] != 1:  # no lease then: nothing would open it
                args = (*args[: sent.plan.slots_index], 1, *args[sent.plan.slots_index + 1 :])
            result = await sent.client.call("EVAL", CHECK, len(keys), *keys, *args)
    except Exception as error:
        _failed(sent.carried)(error)
        raise
    return _decision(sent.limits, result, sent.request_id, sent.tokens)


async def check(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """Admit the request in every scope or in none (one EVALSHA); raises redis errors as they come.

    On the lean client the script also carries the items waiting in this process, and when the connection is
    open the command is queued and its reply awaited as one future (no coroutine below this one, no task): a
    caller cancelled meanwhile does not unsend it, and an entry it admitted stays held at its estimate until it
    leaves the window (the safe side). Requests admitted from a lease do not come here (`admit_from_lease`)."""
    sent = send_check(limits, request_id, tokens)
    if sent is not None:
        return await finish_check(sent)
    client, script, _ = _scripts()
    plan = _plan(limits)
    if isinstance(client, fast_redis.FastRedis):  # not connected yet: `evalsha` opens the connection
        keys, args, carried = _check_command(plan, request_id, tokens, 1, 0)
        try:
            result = await client.evalsha(CHECK_SHA, list(keys), list(args))
        except Exception as error:  # the carried items failed with the check (logged; holds stay)
            _failed(carried)(error)
            raise
    else:
        result = await script(keys=plan.keys, args=[WINDOW_MS, request_id, tokens, *plan.check_tail, 1, 0])
    return _decision(limits, result, request_id, tokens)


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
    await script(keys=list(keys), args=list(args))


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
    `on_error(exception)` gets a failure (a `Resend` when it was not sent: then await `settle`). False when
    that is not possible (TLS client): await `settle`."""
    client, _, _ = _scripts()
    unsettled = _unsettled.get(id(asyncio.get_running_loop()))
    if unsettled is None or unsettled.client is not client:
        return False
    keys, args = _settlement(limits, request_id, tokens, decision)
    unsettled.add(keys, args, on_error)
    return True


_resending: set[asyncio.Task] = set()


def _lease_queue(unsettled: _Unsettled) -> Callable[[tuple, tuple], None]:
    def queue(keys: tuple, args: tuple) -> None:
        unsettled.add(keys, args, _lease_end_failed(keys, args))

    return queue


def _lease_end_failed(keys: tuple, args: tuple) -> Callable[[Exception], None]:
    """What to do when a lease's end (returning its unused slots or tokens) fails: send it again on its own when it
    was not run; otherwise its slots and tokens stay held until they leave the window (the safe side)."""

    def failed(error: Exception) -> None:
        if isinstance(error, (Resend, NoScriptError)):
            task = asyncio.ensure_future(_resend(keys, args))
            _resending.add(task)
            task.add_done_callback(_resending.discard)
        else:
            _log_lease_end_failure(error)

    return failed


def _log_lease_end_failure(error: BaseException) -> None:
    name = type(error).__name__
    logger.warning("rate limits: ending a lease failed (its unused slots stay held): %s: %s", name, error)


async def _resend(keys: tuple, args: tuple) -> None:
    try:
        await send_item(keys, args)
    except Exception as error:
        _log_lease_end_failure(error)
