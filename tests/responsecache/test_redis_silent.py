"""A Redis that stops answering (a loopback server that accepts connections and never replies): the response
cache answers from the database after one GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS, as docs/cache.md says, not
after retries (gateway_project/redis_clients.py: no retry; a client with redis-py's Retry(ExponentialWithJitterBackoff
(base=1, cap=10), 3) took 5.6 s on a connection that stopped answering, 7.8 s on one dropped)."""

from __future__ import annotations

import time

import pytest

from responsecache import redis_store
from tests.fakes.tcp_blackhole import BlackholeProxy
from tests.inference.conftest import generations, wait_idle
from tests.responsecache.conftest import MODEL

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT_MS = 250


@pytest.fixture
def silent_redis(settings):
    proxy = BlackholeProxy("127.0.0.1", 1).start()
    proxy.blackhole()  # accepts, reads, answers nothing
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = f"redis://127.0.0.1:{proxy.port}/0"
    settings.GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS = TIMEOUT_MS
    redis_store._clients.clear()
    yield proxy
    proxy.stop()
    redis_store._clients.clear()


def _timed(oai, input_text: str = "Say hello", **headers) -> tuple[object, float]:
    started = time.monotonic()
    raw = oai.responses.with_raw_response.create(
        model=MODEL, input=input_text, max_output_tokens=50, extra_headers=headers
    )
    elapsed = time.monotonic() - started
    wait_idle()
    return raw, elapsed


def test_a_silent_redis_is_a_miss_from_the_database_after_one_timeout(oai, upstream, silent_redis):
    _, uncached = min((_timed(oai) for _ in range(3)), key=lambda pair: pair[1])  # the request without the cache
    raw, elapsed = _timed(oai, **{"X-Service-Cache": "enabled"})
    assert raw.status_code == 200 and raw.headers["x-service-cache"] == "MISS"
    # One lookup that times out (0.25 s), then the database: retries (with backoff) would add a timeout each.
    assert TIMEOUT_MS / 1000 <= elapsed - uncached < 2 * TIMEOUT_MS / 1000, (elapsed, uncached)
    assert len(generations(4)) == 4
    # The answer was stored in the database (Redis is not tried again for GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS).
    again, _ = _timed(oai, **{"X-Service-Cache": "enabled"})
    assert again.headers["x-service-cache"] == "HIT"


def redis_behind(proxy_port: int, real_url: str) -> str:
    return f"redis://127.0.0.1:{proxy_port}/{real_url.rsplit('/', 1)[1]}"


def real_redis_proxy(settings) -> BlackholeProxy:
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    host, port = settings.REDIS_URL.split("//")[1].split("/")[0].split(":")
    return BlackholeProxy(host, int(port)).start()


def test_a_redis_that_stops_answering_mid_connection_is_a_miss_from_the_database_at_once(oai, upstream, settings):
    # Redis stops answering while the gateway holds a connection to it (the connection dropped, new ones accepted
    # and never answered): one timeout, then the database.
    proxy = real_redis_proxy(settings)
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = redis_behind(proxy.port, settings.REDIS_URL)
    settings.GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS = TIMEOUT_MS
    redis_store._clients.clear()
    try:
        first, _ = _timed(oai, **{"X-Service-Cache": "enabled"})
        assert first.headers["x-service-cache"] == "MISS"  # looked up in Redis, stored there
        _, uncached = min((_timed(oai) for _ in range(3)), key=lambda pair: pair[1])
        proxy.blackhole()  # new connections get no answer
        proxy.drop_connections()  # and the open one is gone
        raw, elapsed = _timed(oai, input_text="Say hello again", **{"X-Service-Cache": "enabled"})
        assert raw.headers["x-service-cache"] == "MISS"
        assert elapsed - uncached < 2 * TIMEOUT_MS / 1000, (elapsed, uncached)
    finally:
        proxy.stop()
        redis_store._clients.clear()
