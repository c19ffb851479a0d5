"""The database path of rate limiting: the same sliding window log in two tables, one transaction per check.

A check first updates the `RateLimitScope` row of each scope (in ascending key order: no deadlocks), reading
its running totals in the same statement (`RETURNING`). That takes the row's lock on PostgreSQL and the write
lock on SQLite, so the checks and settlements of a scope run one at a time across processes and replicas.
Then, in the same transaction, it removes the entries that left the window (one DELETE returning their tokens,
subtracted from the totals), looks up the oldest entry (for the reset headers), decides, and writes the entry
(one INSERT for every scope) and the totals: a handful of index lookups, however many entries the window
holds; for one scope, 5 statements plus BEGIN and COMMIT. Settlements are group-committed (ratelimits/limiter.py):
one transaction for the requests that finish together, one UPDATE per scope row and one of their entries;
nothing for a request that used what it held. Times come from the process clock
(replicas need synchronised clocks, as with any NTP-run fleet).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from budgets.counter_sql import counter_transaction
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState
from ratelimits.models import RateLimitEntry, RateLimitScope

SCOPES = RateLimitScope._meta.db_table
ENTRIES = RateLimitEntry._meta.db_table


def _lock(cursor, key: str, now: int) -> tuple[int, int]:
    """Lock the scope's row (created when missing) and read its running totals: one statement, usually."""
    update = f"UPDATE {SCOPES} SET touched_ms = %s WHERE scope_key = %s RETURNING requests, tokens"
    cursor.execute(update, (now, key))
    rows = cursor.fetchall()
    if not rows:
        insert = (
            f"INSERT INTO {SCOPES} (scope_key, touched_ms, requests, tokens) VALUES (%s, %s, 0, 0) "
            "ON CONFLICT (scope_key) DO NOTHING"
        )
        cursor.execute(insert, (key, now))
        cursor.execute(update, (now, key))
        rows = cursor.fetchall()
    return int(rows[0][0]), int(rows[0][1])


def _window(cursor, key: str, totals: tuple[int, int], cutoff: int) -> tuple[int, int, int | None, bool]:
    """(requests, tokens, oldest admission ms, whether entries expired) of the scope's window, once the expired
    entries are removed (one DELETE that returns what it removed, and one index lookup of the oldest)."""
    cursor.execute(f"DELETE FROM {ENTRIES} WHERE scope_key = %s AND at_ms <= %s RETURNING tokens", (key, cutoff))
    expired = cursor.fetchall()
    freed = sum(int(row[0]) for row in expired)
    cursor.execute(f"SELECT MIN(at_ms) FROM {ENTRIES} WHERE scope_key = %s", (key,))
    oldest = cursor.fetchall()[0][0]
    return max(totals[0] - len(expired), 0), totals[1] - freed, oldest, bool(expired)


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
    keys = sorted({limit.key for limit in limits})  # rows locked in ascending key order: no deadlocks
    with counter_transaction() as cursor:
        totals = {key: _lock(cursor, key, now) for key in keys}
        window = {key: _window(cursor, key, totals[key], now - WINDOW_MS) for key in keys}
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
                key: (n + 1, held + tokens, now if oldest is None else oldest, True)
                for key, (n, held, oldest, _) in window.items()
            }
        for key in keys:
            requests, held, _, changed = window[key]
            if changed:  # a refusal that removed nothing leaves the totals as they are
                cursor.execute(
                    f"UPDATE {SCOPES} SET requests = %s, tokens = %s WHERE scope_key = %s", (requests, held, key)
                )
    states = []
    for limit in limits:
        requests, held, oldest, _ = window[limit.key]
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


@dataclass(frozen=True, slots=True)
class Settlement:
    """One request's settlement: its scopes, the tokens its check held and the tokens it used."""

    keys: tuple[str, ...]
    request_id: str
    tokens: int
    held: int


def settle(limits: list[RateLimit], request_id: str, tokens: int, held: int | None = None) -> None:
    """Replace the request's held tokens (`held`, what its check held; looked up when not given) by `tokens` in
    every scope whose window still holds it."""
    keys = tuple(sorted({limit.key for limit in limits}))
    if held is None:
        marks = ", ".join(["%s"] * len(keys))
        with counter_transaction() as cursor:
            cursor.execute(
                f"SELECT tokens FROM {ENTRIES} WHERE request_id = %s AND scope_key IN ({marks})", (request_id, *keys)
            )
            rows = cursor.fetchall()
        if not rows:
            return
        held = int(rows[0][0])
    settle_many([Settlement(keys, request_id, tokens, held)])


def settle_many(settlements: list[Settlement]) -> None:
    """Settle many requests in one transaction (budgets/settler.py's way): one UPDATE per scope row (in ascending
    key order, as checks lock them: an expiring check cannot remove an entry meanwhile, and no deadlock), one
    UPDATE of the entries; a request that used what it held needs nothing."""
    settlements = [s for s in settlements if s.tokens != s.held]
    if not settlements:
        return
    deltas: dict[str, int] = {}
    for item in settlements:
        for key in item.keys:
            deltas[key] = deltas.get(key, 0) + item.tokens - item.held
    cases = " ".join(["WHEN %s THEN %s"] * len(settlements))
    ids = ", ".join(["%s"] * len(settlements))
    keys = ", ".join(["%s"] * len(deltas))
    with counter_transaction() as cursor:
        for key in sorted(deltas):
            cursor.execute(f"UPDATE {SCOPES} SET tokens = tokens + %s WHERE scope_key = %s", (deltas[key], key))
        cursor.execute(
            f"UPDATE {ENTRIES} SET tokens = CASE request_id {cases} END "
            f"WHERE request_id IN ({ids}) AND scope_key IN ({keys}) RETURNING request_id, scope_key",
            [v for item in settlements for v in (item.request_id, item.tokens)]
            + [item.request_id for item in settlements]
            + sorted(deltas),
        )
        found = {(request_id, key) for request_id, key in cursor.fetchall()}
        missing: dict[str, int] = {}  # entries that left the window already: their scope keeps no delta
        for item in settlements:
            for key in item.keys:
                if (item.request_id, key) not in found:
                    missing[key] = missing.get(key, 0) + item.tokens - item.held
        for key in sorted(missing):
            cursor.execute(f"UPDATE {SCOPES} SET tokens = tokens - %s WHERE scope_key = %s", (missing[key], key))
