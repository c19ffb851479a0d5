"""The Redis path of rate limiting: one Lua script per check (atomic across every process using the Redis).

Per scope, a sorted set `gateway:rl:<scope>:log` (member: request id, score: admission time in ms from the
Redis clock, so every replica shares one clock) and a hash `gateway:rl:<scope>:tokens` (request id -> tokens
held, and `_total`). Both expire a second after the window of their newest entry. One Redis (or a primary),
not a Redis Cluster: a check touches the keys of two scopes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError

from gateway_project import fast_redis
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState

CHECK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, id, tokens = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local cutoff = now - window
local n = #KEYS / 2
local counts, totals, oldest = {}, {}, {}
local refused, dimension, retry = 0, '', 0
for i = 1, n do
  local log, amounts = KEYS[2 * i - 1], KEYS[2 * i]
  local expired = redis.call('ZRANGEBYSCORE', log, '-inf', cutoff)
  if #expired > 0 then
    local freed = 0
    for _, member in ipairs(expired) do
      freed = freed + tonumber(redis.call('HGET', amounts, member) or '0')
      redis.call('HDEL', amounts, member)
    end
    redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff)
    if freed ~= 0 then
      redis.call('HINCRBY', amounts, '_total', string.format('%d', -freed))
    end
  end
  counts[i] = redis.call('ZCARD', log)
  totals[i] = tonumber(redis.call('HGET', amounts, '_total') or '0')
  local first = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  oldest[i] = first[2] and tonumber(first[2]) or -1
  local rpm, tpm = tonumber(ARGV[2 + 2 * i]), tonumber(ARGV[3 + 2 * i])
  if refused == 0 and rpm > 0 and counts[i] >= rpm then
    refused, dimension = i, 'requests'
    local entry = redis.call('ZRANGE', log, counts[i] - rpm, counts[i] - rpm, 'WITHSCORES')
    retry = tonumber(entry[2]) + window - now
  elseif refused == 0 and tpm > 0 and totals[i] + tokens > tpm then
    refused, dimension, retry = i, 'tokens', window
    if tokens <= tpm then
      local need, freed = totals[i] + tokens - tpm, 0
      local entries = redis.call('ZRANGE', log, 0, -1, 'WITHSCORES')
      for j = 1, #entries, 2 do
        freed = freed + tonumber(redis.call('HGET', amounts, entries[j]) or '0')
        if freed >= need then
          retry = tonumber(entries[j + 1]) + window - now
          break
        end
      end
    end
  end
end
if refused == 0 then
  for i = 1, n do
    local log, amounts = KEYS[2 * i - 1], KEYS[2 * i]
    redis.call('ZADD', log, now, id)
    redis.call('HSET', amounts, id, tokens)
    redis.call('HINCRBY', amounts, '_total', ARGV[3])
    redis.call('PEXPIRE', log, window + 1000)
    redis.call('PEXPIRE', amounts, window + 1000)
    counts[i] = counts[i] + 1
    totals[i] = totals[i] + tokens
    if oldest[i] < 0 then oldest[i] = now end
  end
end
local result = {refused, dimension, retry}
for i = 1, n do
  local reset = 0
  if oldest[i] >= 0 then reset = oldest[i] + window - now end
  table.insert(result, counts[i])
  table.insert(result, totals[i])
  table.insert(result, reset)
end
return result
"""

SETTLE = """
for i = 1, #KEYS do
  local held = redis.call('HGET', KEYS[i], ARGV[1])
  if held then
    redis.call('HSET', KEYS[i], ARGV[1], ARGV[2])
    local change = tonumber(ARGV[2]) - tonumber(held)
    if change ~= 0 then
      redis.call('HINCRBY', KEYS[i], '_total', string.format('%d', change))
    end
  end
end
return 0
"""

_clients: dict[int, Any] = {}


class _Plan:
    """What does not change between checks of one set of limits: the script's keys and fixed arguments."""

    __slots__ = ("check_head", "check_tail", "keys", "limits", "settle_keys")

    def __init__(self, limits: list[RateLimit], sha: str) -> None:
        self.limits = limits
        self.keys = []
        for limit in limits:
            self.keys += [f"gateway:rl:{limit.key}:log", f"gateway:rl:{limit.key}:tokens"]
        self.settle_keys = [f"gateway:rl:{limit.key}:tokens" for limit in limits]
        # EVALSHA sha numkeys KEYS... window [request id, tokens] rpm1 tpm1 rpm2 tpm2
        self.check_head = ("EVALSHA", sha, len(self.keys), *self.keys, WINDOW_MS)
        self.check_tail = tuple(
            v for limit in limits for v in (limit.requests_per_minute or 0, limit.tokens_per_minute or 0)
        )


_plans: dict[int, _Plan] = {}


def _plan(limits: list[RateLimit], sha: str) -> _Plan:
    """The plan of `limits` (cached by identity: limits_of returns the same list for an unchanged key)."""
    plan = _plans.get(id(limits))
    if plan is None or plan.limits is not limits:
        if len(_plans) > 4096:
            _plans.clear()
        plan = _plans[id(limits)] = _Plan(limits, sha)
    return plan


def _scripts():
    """(client, check script, settle script) of the running event loop (a client cannot be shared between loops).

    The scripts are awaitables `script(keys=..., args=...)`: on a plain `redis://` or `unix://` URL they run on
    the data plane's lean pipelined client (gateway_project/fast_redis.py, about a fifth of redis-py's CPU per
    call), on other URLs (TLS) on redis-py."""
    loop_id = id(asyncio.get_running_loop())
    entry = _clients.get(loop_id)
    if entry is None:
        timeout = settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS / 1000
        url = settings.GATEWAY_RATE_LIMIT_REDIS_URL
        if fast_redis.supports(url):
            client = fast_redis.FastRedis(url, timeout=timeout)
            entry = (client, _fast_script(client, CHECK), _fast_script(client, SETTLE))
        else:
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            entry = (client, client.register_script(CHECK), client.register_script(SETTLE))
        if len(_clients) > 64:  # event loops of finished test servers
            _clients.clear()
        _clients[loop_id] = entry
    return entry


def _fast_script(client: fast_redis.FastRedis, source: str):
    sha = client.script(source)

    def run(keys: list[str], args: list[Any]):
        return client.evalsha(sha, keys, args)

    return run


CHECK_SHA = fast_redis.script_sha(CHECK)
SETTLE_SHA = fast_redis.script_sha(SETTLE)


async def check(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """Admit the request in every scope or in none (one EVALSHA); raises redis errors as they come.

    On the lean client, when its connection is open, the command is queued and its reply awaited as one future
    (no coroutine below this one, no task): a caller cancelled meanwhile does not unsend it, and an entry it
    admitted stays held at its estimate until it leaves the window (the safe side)."""
    client, script, _ = _scripts()
    plan = _plan(limits, CHECK_SHA)
    future = None
    if isinstance(client, fast_redis.FastRedis):
        future = client.send(*plan.check_head, request_id, tokens, *plan.check_tail)
    if future is not None:
        try:
            result = await future
        except NoScriptError:  # the server forgot the script (restart, SCRIPT FLUSH): EVAL loads it again
            result = await client.call("EVAL", CHECK, *plan.check_head[2:], request_id, tokens, *plan.check_tail)
    else:
        args: list[Any] = [WINDOW_MS, request_id, tokens, *plan.check_tail]
        result = await script(keys=plan.keys, args=args)
    refused, retry = result[0], result[2]
    states = [
        ScopeState(limit, result[3 + 3 * i], result[4 + 3 * i], result[5 + 3 * i]) for i, limit in enumerate(limits)
    ]
    if not refused:
        return Decision(True, states, None, "", 0, tokens, "redis")
    dimension = result[1]
    return Decision(
        admitted=False,
        states=states,
        refused=limits[refused - 1],
        dimension=dimension.decode() if isinstance(dimension, bytes) else dimension,
        retry_after_ms=int(retry),
        tokens=tokens,
        store="redis",
    )


async def settle(limits: list[RateLimit], request_id: str, tokens: int) -> None:
    """Replace the request's held tokens by `tokens` in every scope whose window still holds it."""
    _, _, script = _scripts()
    keys = [f"gateway:rl:{limit.key}:tokens" for limit in limits]
    await script(keys=keys, args=[request_id, tokens])


def settle_nowait(limits: list[RateLimit], request_id: str, tokens: int, on_error) -> bool:
    """`settle` queued on the lean client's open connection, its reply not awaited (`on_error(exception)` gets a
    failure); False when that is not possible (TLS client, no connection open): then await `settle`."""
    client, _, _ = _scripts()
    if not isinstance(client, fast_redis.FastRedis):
        return False
    plan = _plan(limits, CHECK_SHA)
    return client.send_nowait(
        ("EVALSHA", SETTLE_SHA, len(plan.settle_keys), *plan.settle_keys, request_id, tokens), on_error
    )
