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


class Limits(list):
    """The limits of one key and its workspace that are set (a list of RateLimit); `tokens`: whether any of them
    limits tokens per minute (then the request's worst-case tokens are held)."""

    __slots__ = ("tokens",)

    def __init__(self, limits: list[RateLimit]) -> None:
        super().__init__(limits)
        self.tokens = any(limit.tokens_per_minute for limit in limits)


_limits_cache: dict[tuple, Limits] = {}
_by_principal: dict[int, tuple[Principal, Limits]] = {}  # id(principal) -> (that principal, its limits)


def limits_of(principal: Principal) -> Limits | list:
    """The key's and its workspace's limits that are set (no I/O: read from the cached principal).

    The same list object is returned while the key's and workspace's limits are unchanged (the Redis store
    caches its script arguments by it): do not modify it. Looked up by the principal's identity first (the key
    cache hands every request of a key the same principal), then by the limits' values."""
    rpm, tpm = principal.requests_per_minute, principal.tokens_per_minute
    wrpm, wtpm = principal.workspace_requests_per_minute, principal.workspace_tokens_per_minute
    if not (rpm or tpm or wrpm or wtpm):
        return []
    entry = _by_principal.get(id(principal))
    if entry is not None and entry[0] is principal:
        return entry[1]
    signature = (principal.key_hash, rpm, tpm, principal.workspace_id, wrpm, wtpm)
    limits = _limits_cache.get(signature)
    if limits is None:
        found = []
        if rpm or tpm:
            found.append(RateLimit("api-key", principal.key_hash, rpm, tpm))
        if wrpm or wtpm:
            found.append(RateLimit("workspace", str(principal.workspace_id), wrpm, wtpm))
        if len(_limits_cache) > 10_000:
            _limits_cache.clear()
        limits = _limits_cache[signature] = Limits(found)
    if len(_by_principal) > 10_000:
        _by_principal.clear()
    _by_principal[id(principal)] = (principal, limits)
    return limits


@dataclass(slots=True)
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


def format_reset(ms: int) -> bytes:
    """A duration as OpenAI writes its reset headers: `850ms`, `12s`, `59.91s`, `1m0s`, `1m1.5s`."""
    ms = int(ms)
    if ms < 1000:
        return b"%dms" % max(ms, 0)
    seconds, fraction = divmod(ms, 1000)
    if seconds < 60:
        return (b"%d.%03d" % (seconds, fraction)).rstrip(b"0").rstrip(b".") + b"s"
    minutes, seconds = divmod(seconds, 60)
    return (b"%dm%d.%03d" % (minutes, seconds, fraction)).rstrip(b"0").rstrip(b".") + b"s"


_LIMIT_REQUESTS, _REMAINING_REQUESTS, _RESET_REQUESTS = (
    f"x-ratelimit-{name}-requests".encode() for name in ("limit", "remaining", "reset")
)
_LIMIT_TOKENS, _REMAINING_TOKENS, _RESET_TOKENS = (
    f"x-ratelimit-{name}-tokens".encode() for name in ("limit", "remaining", "reset")
)


def rate_limit_headers(decision: Decision) -> list[tuple[bytes, bytes]]:
    """`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, each dimension's from the scope with the least
    remaining in it (the first of those with as little), for the dimensions some scope limits.

    Runs for every request of a rate-limited key: one pass over the scopes, the values formatted as bytes."""
    requests = tokens = None  # (remaining, limit, reset ms) of the tightest scope so far
    for state in decision.states:
        limit = state.limit
        per_minute = limit.requests_per_minute
        if per_minute:
            remaining = per_minute - state.requests
            if remaining < 0:
                remaining = 0
            if requests is None or remaining < requests[0]:
                requests = (remaining, per_minute, state.reset_ms)
        per_minute = limit.tokens_per_minute
        if per_minute:
            remaining = per_minute - state.tokens
            if remaining < 0:
                remaining = 0
            if tokens is None or remaining < tokens[0]:
                tokens = (remaining, per_minute, state.reset_ms)
    headers = []
    if requests is not None:
        remaining, per_minute, reset_ms = requests
        headers += (
            (_LIMIT_REQUESTS, b"%d" % per_minute),
            (_REMAINING_REQUESTS, b"%d" % remaining),
            (_RESET_REQUESTS, format_reset(reset_ms)),
        )
    if tokens is not None:
        remaining, per_minute, reset_ms = tokens
        headers += (
            (_LIMIT_TOKENS, b"%d" % per_minute),
            (_REMAINING_TOKENS, b"%d" % remaining),
            (_RESET_TOKENS, format_reset(reset_ms)),
        )
    return headers
