"""The Redis store of the response cache.

Per organization: one string per entry, `gateway:rcache:<org>:<key>` (expires with the entry's TTL), and a sorted
set `gateway:rcache:<org>:index` of `<key> <model>` members scored by expiry (ms). Storing drops the index's expired
members and, over GATEWAY_RESPONSE_CACHE_MAX_ENTRIES, the entries closest to expiry (one Lua script, atomic).
Purging reads the index. The data plane uses the asyncio client; the management plane (purge) the sync one. Both
wait at most GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS and do not retry (gateway_project/redis_clients.py): a Redis
that stops answering is a cache miss answered from the database after one timeout (responsecache/store.py).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from django.conf import settings

from gateway_project.redis_clients import async_client, sync_client

STORE = """
local index, prefix = KEYS[1], ARGV[1]
local value, ttl_ms, member = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local expires, max_entries = tonumber(ARGV[5]), tonumber(ARGV[6])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', prefix .. string.sub(member, 1, 64), value, 'PX', ttl_ms)
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
redis.call('ZADD', index, expires, member)
local over = redis.call('ZCARD', index) - max_entries
if over > 0 then
  local dropped = redis.call('ZPOPMIN', index, over)
  for i = 1, #dropped, 2 do
    redis.call('DEL', prefix .. string.sub(dropped[i], 1, 64))
  end
end
local last = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', index, math.max(tonumber(last[2]), now) + 1000)
return over
"""

_clients: dict[tuple[int, str], Any] = {}


def prefix(organization_id: Any) -> str:
    return f"gateway:rcache:{organization_id}:"


def index_key(organization_id: Any) -> str:
    return f"gateway:rcache:{organization_id}:index"


def _timeout() -> float:
    return settings.GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS / 1000


def _client():
    """(client, store script) of the running event loop (an asyncio client cannot be shared between loops) and the
    configured URL."""
    url = settings.GATEWAY_RESPONSE_CACHE_REDIS_URL
    loop_id = (id(asyncio.get_running_loop()), url)
    entry = _clients.get(loop_id)
    if entry is None:
        client = async_client(url, _timeout())
        entry = (client, client.register_script(STORE))
        if len(_clients) > 64:  # event loops of finished test servers
            _clients.clear()
        _clients[loop_id] = entry
    return entry


async def get(organization_id: Any, key: str) -> bytes | None:
    client, _ = _client()
    return await client.get(prefix(organization_id) + key)


async def put(organization_id: Any, key: str, value: bytes, model: str, expires: float) -> None:
    _, script = _client()
    ttl_ms = max(1, int((expires - time.time()) * 1000))
    args = [prefix(organization_id), value, ttl_ms, f"{key} {model}", int(expires * 1000)]
    await script(keys=[index_key(organization_id)], args=[*args, settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRIES])


def purge(organization_id: Any, model: str | None = None) -> int:
    """Delete the organization's entries (those answered by `model` only, when given); the number deleted."""
    client = sync_client(settings.GATEWAY_RESPONSE_CACHE_REDIS_URL, _timeout())
    try:
        index = index_key(organization_id)
        members = [m.decode() for m in client.zrange(index, 0, -1)]
        if model is not None:
            members = [m for m in members if m[65:] == model]
        if not members:
            return 0
        deleted = 0
        for start in range(0, len(members), 500):
            chunk = members[start : start + 500]
            pipe = client.pipeline(transaction=False)
            pipe.delete(*[prefix(organization_id) + m[:64] for m in chunk])
            pipe.zrem(index, *chunk)
            deleted += pipe.execute()[0]
        return deleted
    finally:
        client.close()
