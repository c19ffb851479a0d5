"""The Redis path of rate limiting: one Lua script per check (atomic across every process using the Redis).

Per scope, a sorted set `gateway:rl:<scope>:log` (member: request id, score: admission time in ms from the
Redis clock, so every replica shares one clock) and a hash `gateway:rl:<scope>:tokens` (request id -> tokens
held, `_total`, and `_expiry`: when the keys' time to live was last set). Both expire at least a second after
the window of their newest entry: an admission sets their time to live to the window plus two seconds when
the last time it was set is a second old or more (not on every check: two commands less per scope). One
Redis (or a primary), not a Redis Cluster: a check touches the keys of two scopes.

Settlements (a request's held tokens replaced by its usage) are not sent on their own when another check
follows soon: the process's next check carries them, first thing in its script (so that check already sees
the freed tokens); those no check took within `SETTLE_DELAY_MS` go alone (one script for all that are
waiting). One round trip per request while requests keep coming.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError

from gateway_project import fast_redis
from ratelimits.limits import WINDOW_MS, Decision, RateLimit, ScopeState

# How long a settlement may wait for the next check of its process to carry it (then it is sent on its own).
# Tokens stay held that much longer at most: nothing next to a one-minute window.
SETTLE_DELAY_MS = 20

# The settlements a script carries: after its own arguments, triples (number of keys, request id, tokens used),
# the keys (each scope's tokens hash) after its own keys, in the same order. An entry no longer held (it left
# the window) is left alone.
_SETTLE_LUA = """
local function settle(a, k)
  while a <= #ARGV do
    local count, member, used = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
    for j = k, k + count - 1 do
      local held = redis.call('HGET', KEYS[j], member)
      if held then
        redis.call('HSET', KEYS[j], member, used)
        local change = tonumber(used) - tonumber(held)
        if change ~= 0 then
          redis.call('HINCRBY', KEYS[j], '_total', string.format('%d', change))
        end
      end
    end
    a, k = a + 3, k + count
  end
end
"""

# KEYS: (log, tokens) of each scope, then the carried settlements' keys. ARGV: window, request id, tokens,
# number of scopes n, (requests, tokens per minute) of each scope, then the carried settlements.
CHECK = (
    _SETTLE_LUA
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, id, tokens, n = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
settle(5 + 2 * n, 2 * n + 1)
local cutoff = now - window
local counts, totals, oldest, marks = {}, {}, {}, {}
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
  local meta = redis.call('HMGET', amounts, '_total', '_expiry')
  totals[i] = tonumber(meta[1] or '0')
  marks[i] = tonumber(meta[2] or '0')
  local first = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  oldest[i] = first[2] and tonumber(first[2]) or -1
  local rpm, tpm = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
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
    redis.call('HINCRBY', amounts, '_total', ARGV[3])
    if now - marks[i] >= 1000 then  -- the keys' time to live pushed forward at most once a second
      redis.call('HSET', amounts, id, tokens, '_expiry', now)
      redis.call('PEXPIRE', log, window + 2000)
      redis.call('PEXPIRE', amounts, window + 2000)
    else
      redis.call('HSET', amounts, id, tokens)
    end
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
)

SETTLE = (
    _SETTLE_LUA
    + """
settle(1, 1)
return 0
"""
)

_clients: dict[int, Any] = {}


class _Plan:
    """What does not change between checks of one set of limits: the script's keys and fixed arguments."""

    __slots__ = ("check_keys", "check_tail", "keys", "limits", "settle_keys")

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
    """Settlements of one event loop's client waiting for the next check to carry them (or for the timer)."""

    __slots__ = ("client", "items", "timer")

    def __init__(self, client: fast_redis.FastRedis) -> None:
        self.client = client
        self.items: list[tuple[tuple[str, ...], str, int, Callable[[Exception], None]]] = []
        self.timer: asyncio.TimerHandle | None = None

    def add(self, keys: tuple[str, ...], request_id: str, tokens: int, on_error: Callable[[Exception], None]) -> None:
        self.items.append((keys, request_id, tokens, on_error))
        if self.timer is None:  # not cancelled when a check takes the items: one timer per SETTLE_DELAY_MS at most
            self.timer = asyncio.get_running_loop().call_later(SETTLE_DELAY_MS / 1000, self.send_alone)

    def take(self) -> tuple[tuple, tuple, list]:
        """(keys, arguments, items) of the waiting settlements, no longer waiting."""
        items, self.items = self.items, []
        keys: tuple = ()
        args: tuple = ()
        for item_keys, request_id, tokens, _ in items:
            keys += item_keys
            args += (len(item_keys), request_id, tokens)
        return keys, args, items

    def send_alone(self) -> None:
        """The settlements no check carried since the timer was armed (at most SETTLE_DELAY_MS ago): one settle
        script for all."""
        self.timer = None
        if not self.items:
            return
        keys, args, items = self.take()
        sent = self.client.send_nowait(("EVALSHA", SETTLE_SHA, len(keys), *keys, *args), _failed(items))
        if not sent:  # the connection closed meanwhile: settle them one by one in a task (errors are logged)
            for item_keys, request_id, tokens, on_error in items:
                on_error(Resend(item_keys, request_id, tokens))


class Resend(Exception):
    """Given to a settlement's `on_error` when it was not sent: settle it again, on its own (NOSCRIPT too)."""

    def __init__(self, keys: tuple[str, ...], request_id: str, tokens: int) -> None:
        super().__init__("settlement not sent")
        self.keys, self.request_id, self.tokens = keys, request_id, tokens


def _failed(items: list) -> Callable[[Exception], None]:
    def failed(error: Exception) -> None:
        for _, _, _, on_error in items:
            on_error(error)

    return failed


_unsettled: dict[int, _Unsettled] = {}


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
            _unsettled[loop_id] = _Unsettled(client)
        else:
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            entry = (client, client.register_script(CHECK), client.register_script(SETTLE))
        if len(_clients) > 64:  # event loops of finished test servers
            _clients.clear()
            _unsettled.clear()
        _clients[loop_id] = entry
    return entry


def _fast_script(client: fast_redis.FastRedis, source: str):
    sha = client.script(source)

    def run(keys: list[str], args: list[Any]):
        return client.evalsha(sha, keys, args)

    return run


CHECK_SHA = fast_redis.script_sha(CHECK)
SETTLE_SHA = fast_redis.script_sha(SETTLE)


class SentCheck:
    """A check queued on the lean client's open connection whose reply is not awaited yet (`send_check`)."""

    __slots__ = ("args", "carried", "client", "future", "keys", "limits", "tokens")

    def __init__(self, client, future, limits, tokens, keys, args, carried) -> None:
        self.client, self.future, self.limits, self.tokens = client, future, limits, tokens
        self.keys, self.args, self.carried = keys, args, carried

    def abandon(self) -> None:
        """Nobody will await the reply (the request went away): its error, if any, is not logged as unretrieved.
        An entry it admitted stays held at its estimate until it leaves the window (the safe side)."""
        self.future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


def send_check(limits: list[RateLimit], request_id: str, tokens: int) -> SentCheck | None:
    """Queue the check (with the settlements waiting in this process) on the lean client's open connection and
    return at once; None when there is no open lean connection (TLS client, not connected yet): use `check`."""
    client, _, _ = _scripts()
    if not isinstance(client, fast_redis.FastRedis) or not client.is_open():
        return None
    keys, args, carried = _check_command(limits, request_id, tokens)
    future = client.send("EVALSHA", CHECK_SHA, len(keys), *keys, *args)
    return SentCheck(client, future, limits, tokens, keys, args, carried)


def _check_command(limits: list[RateLimit], request_id: str, tokens: int) -> tuple[tuple, tuple, list]:
    """(keys, arguments, carried settlements) of the check script on the lean client: the check of `limits`
    with the settlements waiting in this process, which are no longer waiting."""
    plan = _plan(limits)
    unsettled = _unsettled.get(id(asyncio.get_running_loop()))
    extra_keys, extra_args, carried = unsettled.take() if unsettled is not None and unsettled.items else ((), (), [])
    keys = plan.check_keys + extra_keys if extra_keys else plan.check_keys
    return keys, (WINDOW_MS, request_id, tokens, *plan.check_tail, *extra_args), carried


async def finish_check(sent: SentCheck) -> Decision:
    """The decision of a sent check (its reply awaited as one future); raises redis errors as they come, after
    reporting them to the settlements it carried (logged; their holds stay)."""
    keys, args = sent.keys, sent.args
    try:
        try:
            result = await sent.future
        except NoScriptError:  # the server forgot the script (restart, SCRIPT FLUSH): EVAL loads it again
            result = await sent.client.call("EVAL", CHECK, len(keys), *keys, *args)
    except Exception as error:
        for _, _, _, on_error in sent.carried:
            on_error(error)
        raise
    return _decision(sent.limits, result, sent.tokens)


async def check(limits: list[RateLimit], request_id: str, tokens: int) -> Decision:
    """Admit the request in every scope or in none (one EVALSHA); raises redis errors as they come.

    On the lean client the script also carries the settlements waiting in this process, and when the
    connection is open the command is queued and its reply awaited as one future (no coroutine below this one,
    no task): a caller cancelled meanwhile does not unsend it, and an entry it admitted stays held at its
    estimate until it leaves the window (the safe side)."""
    sent = send_check(limits, request_id, tokens)
    if sent is not None:
        return await finish_check(sent)
    client, script, _ = _scripts()
    if isinstance(client, fast_redis.FastRedis):  # not connected yet: `evalsha` opens the connection
        keys, args, carried = _check_command(limits, request_id, tokens)
        try:
            result = await client.evalsha(CHECK_SHA, list(keys), list(args))
        except Exception as error:  # the carried settlements failed with the check (logged; holds stay)
            for _, _, _, on_error in carried:
                on_error(error)
            raise
    else:
        plan = _plan(limits)
        result = await script(keys=plan.keys, args=[WINDOW_MS, request_id, tokens, *plan.check_tail])
    return _decision(limits, result, tokens)


def _decision(limits: list[RateLimit], result: list, tokens: int) -> Decision:
    refused = result[0]
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
        retry_after_ms=int(result[2]),
        tokens=tokens,
        store="redis",
    )


async def settle(limits: list[RateLimit], request_id: str, tokens: int) -> None:
    """Replace the request's held tokens by `tokens` in every scope whose window still holds it (now)."""
    _, _, script = _scripts()
    keys = [f"gateway:rl:{limit.key}:tokens" for limit in limits]
    await script(keys=keys, args=[len(keys), request_id, tokens])


def settle_later(limits: list[RateLimit], request_id: str, tokens: int, on_error: Callable[[Exception], None]) -> bool:
    """`settle`, carried by this process's next check (or sent alone after `SETTLE_DELAY_MS`), not awaited;
    `on_error(exception)` gets a failure (a `Resend` when it was not sent: then await `settle`). False when
    that is not possible (TLS client): await `settle`."""
    client, _, _ = _scripts()
    unsettled = _unsettled.get(id(asyncio.get_running_loop()))
    if unsettled is None or unsettled.client is not client:
        return False
    unsettled.add(_plan(limits).settle_keys, request_id, tokens, on_error)
    return True
