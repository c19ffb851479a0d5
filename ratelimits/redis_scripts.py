"""The Lua scripts of the Redis path of rate limiting (ratelimits/redis_store.py runs them): the check, which also
applies the items its process carries, and the script that applies waiting items on their own.

Per scope, a sorted set `gateway:rl:<scope>:log` (member: request id, score: admission time in ms from the
Redis clock, so every replica shares one clock) and a hash `gateway:rl:<scope>:tokens` (request id -> tokens
held, `<id>#n` -> the slots of a lease's entry, `_total` tokens, `_extra` the slots of leases beyond one per
entry (a scope counts the log's entries plus `_extra` requests), and `_expiry`: when the
keys' time to live was last set). Both expire at least a second after the window of their newest entry: an
admission sets their time to live to the window plus two seconds when the last time it was set is a second old
or more (not on every check: two commands less per scope), a lease always. One Redis (or a primary), not a
Redis Cluster: a check touches the keys of two scopes.
"""

from __future__ import annotations

from ratelimits.redis_leases import LEASE_ROOM

# The items a script carries (settlements, a lease's end), after its own arguments: quintuples (kind, number of
# keys, member, x, y), their keys (each scope's tokens hash) after the script's own keys, in the same order. An
# entry no longer in a hash (it left the window) is left alone.
# - 's' (a settlement): the member's held tokens become x.
# - 'd' (a settlement of a request admitted from a lease): x added to the lease's tokens.
# - 'r' (a lease's end): x unused slots taken off the lease's weight (`member#n`) and the scope's `_extra`.
_SETTLE_LUA = """
local function settle(a, k)
  while a <= #ARGV do
    local kind, count, member, x = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
    for j = k, k + count - 1 do
      if kind == 'r' then
        if redis.call('HEXISTS', KEYS[j], member .. '#n') == 1 then
          redis.call('HINCRBY', KEYS[j], member .. '#n', -x)
          redis.call('HINCRBY', KEYS[j], '_extra', -x)
        end
      else
        local held = redis.call('HGET', KEYS[j], member)
        if held then
          local change = tonumber(x)
          if kind == 's' then
            change = change - tonumber(held)
            redis.call('HSET', KEYS[j], member, x)
          elseif change ~= 0 then
            redis.call('HINCRBY', KEYS[j], member, x)
          end
          if change ~= 0 then
            redis.call('HINCRBY', KEYS[j], '_total', string.format('%d', change))
          end
        end
      end
    end
    a, k = a + 5, k + count
  end
end
"""

# KEYS: (log, tokens) of each scope, then the carried items' keys. ARGV: window, request id, tokens, number of
# scopes n, (requests, tokens per minute) of each scope, the slots asked for, the lease's time in ms, then the
# carried items. Per scope: the log (member -> admission time) and the tokens hash (member -> tokens held,
# `member#n` -> a lease's slots, `_total` tokens, `_extra`, `_expiry`). Slots > 1 ask for a lease
# (ratelimits/redis_leases.py): granted only when every scope has room for LEASE_ROOM times as many requests and
# tokens, else the request alone is checked. A lease is one entry stamped its time ahead, weighing its slots and
# holding slots x the request's tokens. The reply: refused scope (0: admitted), dimension, retry after ms,
# (requests, tokens, reset ms) of each scope, slots granted.
CHECK = (
    _SETTLE_LUA
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, id, tokens, n = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local slots, ahead = tonumber(ARGV[5 + 2 * n]), tonumber(ARGV[6 + 2 * n])
settle(7 + 2 * n, 2 * n + 1)
local cutoff = now - window
local counts, totals, oldest, marks = {}, {}, {}, {}
local refused, dimension, retry = 0, '', 0
for i = 1, n do
  local log, amounts = KEYS[2 * i - 1], KEYS[2 * i]
  local meta = redis.call('HMGET', amounts, '_total', '_expiry', '_extra')
  totals[i] = tonumber(meta[1] or '0')
  marks[i] = tonumber(meta[2] or '0')
  local extra = tonumber(meta[3] or '0')
  local expired = redis.call('ZRANGEBYSCORE', log, '-inf', cutoff)
  if #expired > 0 then
    local freed, lighter = 0, 0
    for _, member in ipairs(expired) do
      local entry = redis.call('HMGET', amounts, member, member .. '#n')
      freed = freed + tonumber(entry[1] or '0')
      if entry[2] then
        lighter = lighter + tonumber(entry[2]) - 1
        redis.call('HDEL', amounts, member, member .. '#n')
      else
        redis.call('HDEL', amounts, member)
      end
    end
    redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff)
    if freed ~= 0 then
      redis.call('HINCRBY', amounts, '_total', string.format('%d', -freed))
      totals[i] = totals[i] - freed
    end
    if lighter ~= 0 then
      redis.call('HINCRBY', amounts, '_extra', -lighter)
      extra = extra - lighter
    end
  end
  counts[i] = redis.call('ZCARD', log) + extra
  local first = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  oldest[i] = first[2] and tonumber(first[2]) or -1
  local rpm, tpm = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  if refused == 0 and rpm > 0 and counts[i] >= rpm then
    refused, dimension = i, 'requests'
    -- the entry whose leaving brings the count under the limit; with leases in the window (entries weighing
    -- more than one), the entry at that position counting one each: no earlier than the exact one
    local entry = redis.call('ZRANGE', log, counts[i] - rpm, counts[i] - rpm, 'WITHSCORES')
    if not entry[2] then entry = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES') end
    retry = entry[2] and (tonumber(entry[2]) + window - now) or window
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
if refused == 0 and slots > 1 then
  for i = 1, n do
    local rpm, tpm = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
    if (rpm > 0 and counts[i] + LEASE_ROOM * slots > rpm)
        or (tpm > 0 and totals[i] + LEASE_ROOM * slots * tokens > tpm) then
      slots = 1
      break
    end
  end
end
if slots < 2 then ahead = 0 end
if refused == 0 then
  local held, stamp = tokens, now + ahead
  if slots > 1 then held = slots * tokens end
  local held_text = slots > 1 and string.format('%d', held) or ARGV[3]
  for i = 1, n do
    local log, amounts = KEYS[2 * i - 1], KEYS[2 * i]
    redis.call('ZADD', log, stamp, id)
    redis.call('HINCRBY', amounts, '_total', held_text)
    if slots > 1 then  -- a lease: its weight, and the time to live pushed forward (its entry is stamped ahead)
      redis.call('HINCRBY', amounts, '_extra', slots - 1)
      redis.call('HSET', amounts, id, held_text, id .. '#n', slots, '_expiry', now)
      redis.call('PEXPIRE', log, window + ahead + 2000)
      redis.call('PEXPIRE', amounts, window + ahead + 2000)
    elseif now - marks[i] >= 1000 then  -- the time to live pushed forward at most once a second
      redis.call('HSET', amounts, id, held_text, '_expiry', now)
      redis.call('PEXPIRE', log, window + 2000)
      redis.call('PEXPIRE', amounts, window + 2000)
    else
      redis.call('HSET', amounts, id, held_text)
    end
    counts[i] = counts[i] + slots
    totals[i] = totals[i] + held
    if oldest[i] < 0 then oldest[i] = stamp end
  end
else
  slots = 0
end
local result = {refused, dimension, retry}
for i = 1, n do
  local reset = 0
  if oldest[i] >= 0 then reset = oldest[i] + window - now end
  table.insert(result, counts[i])
  table.insert(result, totals[i])
  table.insert(result, reset)
end
table.insert(result, slots)
return result
""".replace("LEASE_ROOM", str(LEASE_ROOM))
)

SETTLE = (
    _SETTLE_LUA
    + """
settle(1, 1)
return 0
"""
)
