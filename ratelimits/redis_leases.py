"""Leases: while a key is busy and far from its limits, one Redis check admits a batch of its requests.

A check in Redis costs a round trip, about 30 µs of Redis CPU and as much in the gateway; at hundreds of
requests a second per key that is most of what rate limiting costs. So when this process's requests of one key
(with its workspace) come less than `GATEWAY_RATE_LIMIT_LEASE_MS` apart (50 by default; 0: no leases), the check
asks for a lease of several slots instead of one: the script grants it only when every scope has room for
`LEASE_ROOM` times as many requests and tokens as the lease holds (else the request is checked alone, as
always). A granted lease is one entry in each scope's log, stamped that long ahead of the Redis clock, weighing
its slots in the scope's request count and holding slots x the request's tokens. For that long the process
admits the key's requests from the lease without asking Redis (each takes a slot and its tokens); then, or
when its slots are used up, the lease admits no more; when its time is up, it ends: its unused slots and tokens
are taken off its entry (carried by the process's next check, like settlements). Its requests' settlements adjust
its tokens in this process until its time is up, its slots used up or not (no Redis item: the tokens they did not
use are returned with the lease's end, and its next requests may take them meanwhile); those that end after it as
items carried like other settlements. A lease used up before its time does not keep the key's next requests
from asking for the next one.

Why no interval admits more than the limit: every request admitted from a lease is counted (in its entry's
weight) from before its admission until at least a window after it (the entry is stamped at the lease's end,
and the request is admitted before that); an unused slot counts too until it is returned. What a lease costs:
its unused slots are refused to other processes until it ends (at most the lease's time plus the settlement
delay);
the `x-ratelimit-remaining-*` headers show what this process knows (the window as of the lease, minus what it
admitted from it since); a 429's `Retry-After` while leases are in the window may be later than the exact
moment (never earlier). Near a limit (less than `LEASE_ROOM` leases' worth of room) every request is checked in
Redis on its own, so "exactly the limit admitted" holds where it is decided.

Lease sizes adapt per key: `FIRST_SLOTS`, doubled when a lease is used up before it ends (up to `MAX_SLOTS`),
set to what was used when it ends with slots left. A lease that ends with no request but its asker
admitted from it (the key's requests come close enough to ask one, not to use it: a lease costs more than a
check then, its entry and its return) is followed by a check that asks none, then by a lease of 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ratelimits.limits import Decision, ScopeState

LEASE_ROOM = 8  # a lease of s slots only while every scope has room for LEASE_ROOM * s requests and tokens
FIRST_SLOTS = 4
MAX_SLOTS = 32

# queue(keys, arguments): an item for the process's next script (ratelimits/redis_store.py).
Queue = Callable[[tuple, tuple], None]


class Lease:
    """Slots of one set of limits granted to this process by one check (see the module docstring)."""

    __slots__ = ("deadline", "granted_at", "held", "member", "plan", "slots", "states", "timer", "tokens", "used")

    def __init__(self, plan, request_id: str, slots: int, tokens: int, states: list[ScopeState], deadline: float):
        self.plan = plan
        self.member = request_id  # the lease's entry in each scope's log and tokens hash
        self.slots = slots
        self.used = 1  # the request that asked for it
        self.tokens = slots * tokens
        self.held = tokens
        self.states = states  # each scope's window in the reply, the whole lease included
        self.deadline = deadline
        self.granted_at = 0.0
        self.timer: asyncio.TimerHandle | None = None

    def decision(self, tokens: int, now: float) -> Decision:
        """The decision of a request admitted from the lease: the window as of the grant, minus what is unused."""
        unused_slots, unused_tokens = self.slots - self.used, self.tokens - self.held
        elapsed = int((now - self.granted_at) * 1000)
        states = [
            ScopeState(s.limit, s.requests - unused_slots, s.tokens - unused_tokens, max(s.reset_ms - elapsed, 0))
            for s in self.states
        ]
        return Decision(True, states, tokens=tokens, store="redis", lease=self.member)


class Leases:
    """The leases of one event loop's Redis client, by set of limits (`plan`: its script's keys)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: Queue) -> None:
        self.loop = loop
        self.queue = queue
        self.open: dict[int, Lease] = {}  # plan -> its lease that admits requests
        # member -> a lease whose tokens its requests' settlements still adjust here: open, or used up before its time
        self.settling: dict[str, Lease] = {}
        self.asking: dict[int, asyncio.Future] = {}  # plan -> the reply of the check asking it a lease
        self.last_check: dict[int, float] = {}  # plan -> when its last check was sent
        self.size: dict[int, int] = {}

    def admit(self, plan, tokens: int) -> Decision | None:
        """A decision from the plan's open lease (a slot and `tokens` taken), or None: check in Redis."""
        lease = self.open.get(id(plan))
        if lease is None:
            return None
        now = self.loop.time()
        if now >= lease.deadline:
            self.end(lease)
            return None
        if lease.held + tokens > lease.tokens:  # larger than what is left: checked alone
            return None
        lease.used += 1
        lease.held += tokens
        decision = lease.decision(tokens, now)
        if lease.used == lease.slots:
            self.end(lease)
        return decision

    def settle(self, member: str, change: int) -> bool:
        """A request admitted from the lease `member` ended, using `change` tokens more (negative: fewer) than it
        held: until that lease's time is up, its held tokens change here (returned to Redis with its end, or taken
        by its next requests) and True; False when it has ended (queue the settlement for Redis)."""
        lease = self.settling.get(member)
        if lease is None:
            return False
        lease.held += change
        return True

    def slots_to_ask(self, plan, lease_ms: int) -> int:
        """1, or a lease's slots when the plan's last check was sent less than `lease_ms` ago and no lease of it is
        open or asked for (`lease_ms` 0: leases are off)."""
        if not lease_ms:
            return 1
        key = id(plan)
        now = self.loop.time()
        last = self.last_check.get(key)
        if len(self.last_check) > 4096:
            self.last_check.clear()
        self.last_check[key] = now
        if last is None or now - last > lease_ms / 1000 or key in self.asking or key in self.open:
            return 1
        size = self.size.get(key, FIRST_SLOTS)
        if size == 1:  # the last lease served its asker alone: this check asks none, the next a lease of 2
            self.size[key] = 2
        return size

    def asked(self, plan, future: asyncio.Future) -> None:
        """A check asking a lease for the plan was sent: its reply is `future` (other requests of the plan may wait
        for it rather than ask Redis themselves)."""
        self.asking[id(plan)] = future

    def waiting_for(self, plan) -> asyncio.Future | None:
        """The reply of the plan's lease asked for and not in yet, or None."""
        return self.asking.get(id(plan)) if self.asking else None

    def replied(self, plan, request_id: str, tokens: int, deadline: float, future: asyncio.Future) -> None:
        """The reply of a check that asked for a lease (a done callback, so a caller gone meanwhile does not leave
        a granted lease unreturned): opens the lease when it was granted, admitting until `deadline` (this loop's
        clock when the check was sent, plus the lease's time: its entry is stamped that far past the script's run)."""
        self.asking.pop(id(plan), None)
        if future.cancelled() or future.exception() is not None:
            return
        result = future.result()
        slots = result[-1]
        if slots < 2:
            return
        states = [
            ScopeState(limit, result[3 + 3 * i], result[4 + 3 * i], result[5 + 3 * i])
            for i, limit in enumerate(plan.limits)
        ]
        lease = Lease(plan, request_id, slots, tokens, states, deadline)
        lease.granted_at = self.loop.time()
        previous = self.open.get(id(plan))
        if previous is not None:  # cannot happen while `asking` holds the plan; end it rather than lose it
            self.end(previous)
        self.open[id(plan)] = lease
        self.settling[lease.member] = lease
        lease.timer = self.loop.call_at(lease.deadline, self._time_up, lease)

    def end(self, lease: Lease) -> None:
        """The lease admits no more requests: size the next one; at its time, or now if its time is up or slots were
        left, return its unused slots and the tokens its requests did not use (queued for the next script)."""
        plan = lease.plan
        if self.open.get(id(plan)) is not lease:
            return
        del self.open[id(plan)]
        if len(self.size) > 4096:
            self.size.clear()
        if lease.used == lease.slots:
            self.size[id(plan)] = min(2 * lease.slots, MAX_SLOTS)
            if self.loop.time() < lease.deadline:  # used up before its time: its requests settle in it until then
                return
        else:
            self.size[id(plan)] = lease.used  # 1: it served its asker alone (see slots_to_ask)
            unused = ("r", len(plan.settle_keys), lease.member, lease.slots - lease.used, 0)
            self.queue(plan.settle_keys, unused)
        self._close(lease)

    def _time_up(self, lease: Lease) -> None:
        lease.timer = None
        if self.open.get(id(lease.plan)) is lease:
            self.end(lease)
        elif self.settling.get(lease.member) is lease:
            self._close(lease)

    def _close(self, lease: Lease) -> None:
        """Its requests settle through Redis from now on: return the tokens they did not use (or add those they used
        beyond what they held), queued for the next script."""
        self.settling.pop(lease.member, None)
        if lease.timer is not None:
            lease.timer.cancel()
            lease.timer = None
        if lease.held != lease.tokens:
            plan = lease.plan
            change = lease.held - lease.tokens
            self.queue(plan.settle_keys, ("d", len(plan.settle_keys), lease.member, change, 0))
