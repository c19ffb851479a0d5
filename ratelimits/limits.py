"""What a rate-limit check is about and what it decided, and the response headers that show it.

Algorithm: a **sliding window log** of one minute per scope (an API key, a workspace). Each admitted request
is an entry with its admission time and the tokens it holds. A request is admitted when, over the last 60
seconds, every scope it belongs to has fewer than `requests_per_minute` entries and its held tokens plus this
request's worst-case tokens fit in `tokens_per_minute`. So no 60-second interval ever admits more than
`requests_per_minute` requests or holds more than `tokens_per_minute` tokens (tokens are held from the
worst-case estimate at admission and settled to the actual usage when the request ends, while its entry is
still in the window). Exact, unlike fixed windows (up to 2x at a boundary) or the approximating sliding
window counter; the log costs one entry per admitted request per scope, bounded by the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from accounts.principal import Principal

WINDOW_MS = 60_000


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The per-minute limits of one scope (None: that dimension is unlimited)."""

    scope: str  # "api-key" | "workspace"
    scope_id: str
    requests_per_minute: int | None
    tokens_per_minute: int | None

    @property
    def key(self) -> str:
        return f"{self.scope}:{self.scope_id}"


_limits_cache: dict[tuple, list[RateLimit]] = {}


def limits_of(principal: Principal) -> list[RateLimit]:
    """The key's and its workspace's limits that are set (no I/O: read from the cached principal).

    The same list object is returned while the key's and workspace's limits are unchanged (the Redis store
    caches its script arguments by it): do not modify it."""
    rpm, tpm = principal.requests_per_minute, principal.tokens_per_minute
    wrpm, wtpm = principal.workspace_requests_per_minute, principal.workspace_tokens_per_minute
    if not (rpm or tpm or wrpm or wtpm):
        return []
    signature = (principal.key_hash, rpm, tpm, principal.workspace_id, wrpm, wtpm)
    limits = _limits_cache.get(signature)
    if limits is None:
        limits = []
        if rpm or tpm:
            limits.append(RateLimit("api-key", principal.key_hash, rpm, tpm))
        if wrpm or wtpm:
            limits.append(RateLimit("workspace", str(principal.workspace_id), wrpm, wtpm))
        if len(_limits_cache) > 10_000:
            _limits_cache.clear()
        _limits_cache[signature] = limits
    return limits


@dataclass(frozen=True, slots=True)
class ScopeState:
    """A scope's window after the check: requests and tokens in it, and when its oldest entry leaves it."""

    limit: RateLimit
    requests: int
    tokens: int
    reset_ms: int  # until the oldest entry leaves the window (remaining goes up then); 0 when empty


@dataclass(slots=True)
class Decision:
    """The outcome of a check; when refused, which scope and dimension refused and when to retry."""

    admitted: bool
    states: list[ScopeState]
    refused: RateLimit | None = None
    dimension: str = ""  # "requests" | "tokens"
    retry_after_ms: int = 0
    tokens: int = 0  # the tokens this request asked to hold
    store: str = ""  # "redis" | "database": where the entries live (settlement goes there)
    lease: str = ""  # admitted from a Redis lease: the lease's member that holds its tokens (settled by difference)


def format_reset(ms: int) -> str:
    """A duration as OpenAI writes its reset headers: `850ms`, `12s`, `1m0s`."""
    ms = max(int(ms), 0)
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m" + (f"{rest:.3f}".rstrip("0").rstrip(".") or "0") + "s"


_HEADER_NAMES = {
    dimension: tuple(f"x-ratelimit-{name}-{dimension}".encode() for name in ("limit", "remaining", "reset"))
    for dimension in ("requests", "tokens")
}


def _tightest(states: list[ScopeState], dimension: str) -> tuple[int, int, int] | None:
    """(limit, remaining, reset ms) of the scope with the least remaining in `dimension`, or None."""
    best = None
    for state in states:
        limit = state.limit.requests_per_minute if dimension == "requests" else state.limit.tokens_per_minute
        if not limit:
            continue
        used = state.requests if dimension == "requests" else state.tokens
        candidate = (limit, max(limit - used, 0), state.reset_ms)
        if best is None or candidate[1] < best[1]:
            best = candidate
    return best


def rate_limit_headers(decision: Decision) -> list[tuple[bytes, bytes]]:
    """`x-ratelimit-{limit,remaining,reset}-{requests,tokens}` of the tightest scope of each dimension."""
    headers = []
    for dimension in ("requests", "tokens"):
        tightest = _tightest(decision.states, dimension)
        if tightest is None:
            continue
        limit, remaining, reset_ms = tightest
        names = _HEADER_NAMES[dimension]
        headers.append((names[0], b"%d" % limit))
        headers.append((names[1], b"%d" % remaining))
        headers.append((names[2], format_reset(reset_ms).encode()))
    return headers
