"""Unknown API keys per client address: a flood of random bearer tokens gets 429 and stops reaching the database.

Each process counts, per client address, the requests whose key was unknown (not "disabled" or "expired":
those keys exist) over the last 60 seconds. Once an address reaches `GATEWAY_AUTH_FAILURES_PER_MINUTE`
(0: off), its requests with a key this process has not already authenticated get 429 with `Retry-After`
before any database lookup, on both planes, until its oldest failure leaves the window. Keys this process
authenticated before (the last `MAX_KNOWN_KEYS` key hashes, kept whatever the policy version) are still
looked up from that address, so a client behind the same NAT as an attacker keeps working. The count is per
process (no Redis or database round trip on the flood's path); N processes admit at most N times the limit
of lookups per address.

The client address is the ASGI `client` (uvicorn's `--proxy-headers --forwarded-allow-ips` make it the
`X-Forwarded-For` address of a trusted load balancer).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

from django.conf import settings

from gateway_project.api.errors import GatewayError

WINDOW_SECONDS = 60.0
MAX_ADDRESSES = 10_000  # the least recently failing addresses are forgotten beyond this
MAX_KNOWN_KEYS = 100_000  # hashes of keys that authenticated, least recently used forgotten beyond this


class FailedAuthentications:
    """A sliding window log of failed authentications per client address (thread-safe: both planes use it)."""

    def __init__(self) -> None:
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._known: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, key_hash: str) -> None:
        """A key that authenticated: it is looked up even from an address over the limit."""
        with self._lock:
            if key_hash in self._known:
                self._known.move_to_end(key_hash)
                return
            if len(self._known) >= MAX_KNOWN_KEYS:
                self._known.popitem(last=False)
            self._known[key_hash] = None

    def retry_after(self, address: str, now: float | None = None) -> float | None:
        """Seconds until `address` may try an unknown key again, or None when it is under the limit."""
        limit = settings.GATEWAY_AUTH_FAILURES_PER_MINUTE
        if limit <= 0 or not self._failures:
            return None
        now = time.monotonic() if now is None else now
        with self._lock:
            failures = self._failures.get(address)
            if failures is None:
                return None
            while failures and failures[0] <= now - WINDOW_SECONDS:
                failures.popleft()
            if len(failures) < limit:
                return None
            return failures[len(failures) - limit] + WINDOW_SECONDS - now

    def record(self, address: str, now: float | None = None) -> None:
        """Count one request of `address` whose key was unknown."""
        limit = settings.GATEWAY_AUTH_FAILURES_PER_MINUTE
        if limit <= 0:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            failures = self._failures.pop(address, None)
            if failures is None:
                failures = deque()
                if len(self._failures) >= MAX_ADDRESSES:
                    self._failures.popitem(last=False)
            failures.append(now)
            while len(failures) > limit:
                failures.popleft()
            self._failures[address] = failures

    def check(self, address: str, key_hash: str) -> None:
        """429 with Retry-After when `address` sent too many unknown keys in the last minute (and this key is not
        one that authenticated before)."""
        if key_hash in self._known:
            return
        wait = self.retry_after(address)
        if wait is not None:
            seconds = max(1, int(-(-wait // 1)))
            raise GatewayError(
                429,
                f"Too many requests with an invalid API key from this address; retry after {seconds} s",
                headers={"Retry-After": str(seconds)},
            )

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._known.clear()


failed_authentications = FailedAuthentications()
