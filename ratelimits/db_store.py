"""The database path of rate limiting: the same sliding window log in two tables, one transaction per check.

A check first updates the `RateLimitScope` row of each scope (in ascending key order: no deadlocks). That
takes the row's lock on PostgreSQL and the write lock on SQLite, so the checks and settlements of a scope run
one at a time across processes and replicas. Then, in the same transaction, it removes the entries that left
the window (subtracting them from the scope's running totals), decides, and writes the entry and the totals:
a handful of index lookups, however many entries the window holds. Times come from the process clock
(replicas need synchronised clocks, as with any NTP-run fleet).
"""

from __future__ import annotations

import time

from budgets.counter_sql import counter_transaction
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState
from ratelimits.models import RateLimitEntry, RateLimitScope

SCOPES = RateLimitScope._meta.db_table
ENTRIES = RateLimitEntry._meta.db_table


def _lock(cursor, keys: list[str], now: int) -> None:
    update = f"UPDATE {SCOPES} SET touched_ms = %s WHERE scope_key = %s"
    for key in sorted(keys):
        cursor.execute(update, (now, key))
        if cursor.rowcount == 0:
            insert = (
                f"INSERT INTO {SCOPES} (scope_key, touched_ms, requests, tokens) VALUES (%s, %s, 0, 0) "
                "ON CONFLICT (scope_key) DO NOTHING"
            )
            cursor.execute(insert, (key, now))
            cursor.execute(update, (now, key))


def _window(cursor, key: str, cutoff: int) -> tuple[int, int, int | None]:
    """(requests, tokens, oldest admission ms) of the scope's window, once the expired entries are removed."""
    cursor.execute(
        f"SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM {ENTRIES} WHERE scope_key = %s AND at_ms <= %s",
        (key, cutoff),
    )
    expired, freed = (int(value) for value in cursor.fetchall()[0])
    if expired:
        cursor.execute(f"DELETE FROM {ENTRIES} WHERE scope_key = %s AND at_ms <= %s", (key, cutoff))
    cursor.execute(f"SELECT requests, tokens FROM {SCOPES} WHERE scope_key = %s", (key,))
    requests, tokens = cursor.fetchall()[0]
    cursor.execute(f"SELECT MIN(at_ms) FROM {ENTRIES} WHERE scope_key = %s", (key,))
    oldest = cursor.fetchall()[0][0]
    return max(int(requests) - expired, 0), int(tokens) - freed, oldest


def _retry_ms(cursor, limit: RateLimit, dimension: str, used: tuple[int, int], tokens: int, now: int) -> int:
    """Milliseconds until enough of the scope's entries leave the window for this request to fit."""
    if dimension == "tokens" and tokens > limit.tokens_per_minute:
        return WINDOW_MS
    cursor.execute(f"SELECT at_ms, tokens FROM {ENTRIES} WHERE scope_key = %s ORDER BY at_ms, id", (limit.key,))
    rows = cursor.fetchall()
    if dimension == "requests":
        return int(rows[used[0] - limit.requests_per_minute][0]) + WINDOW_MS - now
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
    keys = [limit.key for limit in limits]
    with counter_transaction() as cursor:
        _lock(cursor, keys, now)
        window = {key: _window(cursor, key, now - WINDOW_MS) for key in keys}
        refused, dimension, retry = None, "", 0
        for limit in limits:
            used = window[limit.key][:2]
            dimension = _refusal(limit, used, tokens)
            if dimension:
                refused = limit
                retry = _retry_ms(cursor, limit, dimension, used, tokens, now)
                break
        if refused is None:
            cursor.execute(
                f"INSERT INTO {ENTRIES} (scope_key, request_id, at_ms, tokens) VALUES "
                + ", ".join(["(%s, %s, %s, %s)"] * len(keys)),
                [value for key in keys for value in (key, request_id, now, tokens)],
            )
            window = {
                key: (n + 1, held + tokens, now if oldest is None else oldest)
                for key, (n, held, oldest) in window.items()
            }
        for key in sorted(keys):
            cursor.execute(
                f"UPDATE {SCOPES} SET requests = %s, tokens = %s WHERE scope_key = %s",
                (window[key][0], window[key][1], key),
            )
    states = []
    for limit in limits:
        requests, held, oldest = window[limit.key]
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
    keys = [limit.key for limit in limits]
    marks = ", ".join(["%s"] * len(keys))
    with counter_transaction() as cursor:
        _lock(cursor, keys, int(time.time() * 1000))  # an expiring check cannot remove the entry meanwhile
        cursor.execute(
            f"SELECT scope_key, tokens FROM {ENTRIES} WHERE request_id = %s AND scope_key IN ({marks})",
            (request_id, *keys),
        )
        held = cursor.fetchall()
        if not held:
            return
        cursor.execute(
            f"UPDATE {ENTRIES} SET tokens = %s WHERE request_id = %s AND scope_key IN ({marks})",
            (tokens, request_id, *keys),
        )
        for key, old in sorted(held):
            cursor.execute(f"UPDATE {SCOPES} SET tokens = tokens + %s WHERE scope_key = %s", (tokens - int(old), key))
