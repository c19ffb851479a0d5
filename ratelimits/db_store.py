"""The database path of rate limiting: the same sliding window log in two tables, one transaction per check.

A check first updates the `RateLimitScope` row of each scope (in ascending key order: no deadlocks). That
takes the row's lock on PostgreSQL and the write lock on SQLite, so the checks of a scope run one at a time
across processes and replicas; the window is then read and the entries written in the same transaction.
Times come from the process clock (replicas need synchronised clocks, as with any NTP-run fleet).
"""

from __future__ import annotations

import time

from budgets.counter_sql import counter_transaction
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState
from ratelimits.models import RateLimitEntry, RateLimitScope

SCOPES = RateLimitScope._meta.db_table
ENTRIES = RateLimitEntry._meta.db_table


def _lock(cursor, key: str, now: int) -> None:
    update = f"UPDATE {SCOPES} SET touched_ms = %s WHERE scope_key = %s"
    cursor.execute(update, (now, key))
    if cursor.rowcount == 0:
        cursor.execute(
            f"INSERT INTO {SCOPES} (scope_key, touched_ms) VALUES (%s, %s) ON CONFLICT (scope_key) DO NOTHING",
            (key, now),
        )
        cursor.execute(update, (now, key))


def _window(cursor, keys: list[str], cutoff: int) -> dict[str, tuple[int, int, int | None]]:
    """{scope key: (requests, tokens, oldest admission ms)} of the windows, after removing expired entries."""
    marks = ", ".join(["%s"] * len(keys))
    cursor.execute(f"DELETE FROM {ENTRIES} WHERE scope_key IN ({marks}) AND at_ms <= %s", (*keys, cutoff))
    cursor.execute(
        f"SELECT scope_key, COUNT(*), COALESCE(SUM(tokens), 0), MIN(at_ms) FROM {ENTRIES} "
        f"WHERE scope_key IN ({marks}) GROUP BY scope_key",
        keys,
    )
    return {row[0]: (int(row[1]), int(row[2]), row[3]) for row in cursor.fetchall()}


def _retry_ms(cursor, limit: RateLimit, dimension: str, used: tuple[int, int], tokens: int, now: int) -> int:
    """Milliseconds until enough of the scope's entries leave the window for this request to fit."""
    cursor.execute(f"SELECT at_ms, tokens FROM {ENTRIES} WHERE scope_key = %s ORDER BY at_ms, id", (limit.key,))
    rows = cursor.fetchall()
    if dimension == "requests":
        at = rows[used[0] - limit.requests_per_minute][0]
        return int(at) + WINDOW_MS - now
    if tokens > limit.tokens_per_minute:
        return WINDOW_MS
    need, freed = used[1] + tokens - limit.tokens_per_minute, 0
    for at, held in rows:
        freed += int(held)
        if freed >= need:
            return int(at) + WINDOW_MS - now
    return WINDOW_MS


def _refusal(limit: RateLimit, used: tuple[int, int], tokens: int) -> str:
    if limit.requests_per_minute and used[0] >= limit.requests_per_minute:
        return "requests"
    if limit.tokens_per_minute and used[1] + tokens > limit.tokens_per_minute:
        return "tokens"
    return ""


def check(limits: list[RateLimit], request_id: str, tokens: int, now_ms: int | None = None) -> Decision:
    """Admit the request in every scope or in none (sync: runs on the data plane's database thread)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    keys = sorted({limit.key for limit in limits})
    with counter_transaction() as cursor:
        for key in keys:
            _lock(cursor, key, now)
        window = _window(cursor, keys, now - WINDOW_MS)
        refused, dimension, retry = None, "", 0
        for limit in limits:
            requests, held, _ = window.get(limit.key, (0, 0, None))
            dimension = _refusal(limit, (requests, held), tokens)
            if dimension:
                refused = limit
                retry = _retry_ms(cursor, limit, dimension, (requests, held), tokens, now)
                break
        if refused is None:
            cursor.execute(
                f"INSERT INTO {ENTRIES} (scope_key, request_id, at_ms, tokens) VALUES "
                + ", ".join(["(%s, %s, %s, %s)"] * len(keys)),
                [value for key in keys for value in (key, request_id, now, tokens)],
            )
    states = []
    for limit in limits:
        requests, held, oldest = window.get(limit.key, (0, 0, None))
        if refused is None:
            requests, held, oldest = requests + 1, held + tokens, now if oldest is None else oldest
        reset = 0 if oldest is None else int(oldest) + WINDOW_MS - now
        states.append(ScopeState(limit, requests, held, reset))
    return Decision(
        admitted=refused is None,
        states=states,
        refused=refused,
        dimension=dimension if refused else "",
        retry_after_ms=retry,
        tokens=tokens,
        store="database",
    )


def settle(limits: list[RateLimit], request_id: str, tokens: int) -> None:
    """Replace the request's held tokens by `tokens` in every scope whose window still holds it."""
    marks = ", ".join(["%s"] * len(limits))
    with counter_transaction() as cursor:
        cursor.execute(
            f"UPDATE {ENTRIES} SET tokens = %s WHERE request_id = %s AND scope_key IN ({marks})",
            (tokens, request_id, *[limit.key for limit in limits]),
        )
