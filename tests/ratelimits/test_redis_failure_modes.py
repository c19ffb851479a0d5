"""A partial Redis outage: this process cannot reach the rate-limit Redis while others may still count in it.
`GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE` decides what the process admits meanwhile, and each choice is what the
test sees through the loopback gateway with a key of `requests_per_minute: 10`:

- `database` (default): the process counts in the database's window; the windows of the two stores are apart,
  so with the first 10 requests admitted in Redis (another process, or this one before the outage) 10 more are
  admitted: up to the limit in each store during a split (the behaviour measured as 20 of 10);
- `fail_closed`: 503 with Retry-After, nothing admitted without Redis: the limit holds across the split;
- `fail_open`: every request admitted, counted nowhere.

With REDIS_URL (PostgreSQL + Redis run) the first 10 requests are admitted through the real Redis first; without
it only the failing half runs."""

from __future__ import annotations

import socket

import pytest

from ratelimits import limiter, redis_store
from tests.inference.conftest import wait_idle
from tests.ratelimits.test_middleware import BODY, set_limits

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 10


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once it is closed: connections are refused


def _use_redis(settings, url: str) -> None:
    settings.GATEWAY_RATE_LIMIT_REDIS_URL = url
    redis_store._clients.clear()  # the next check opens a client of this URL on the server's loop
    redis_store._unsettled.clear()
    redis_store._leases.clear()
    limiter._room.clear()
    limiter.redis_health.reset()


@pytest.fixture
def split(settings, http, org):
    set_limits(org, org.inference_hash, requests_per_minute=LIMIT)
    admitted_in_redis = 0
    if settings.REDIS_URL:
        _use_redis(settings, settings.REDIS_URL)
        statuses = [http.post("/responses", json=BODY).status_code for _ in range(LIMIT + 1)]
        assert statuses == [200] * LIMIT + [429]  # the limit reached in Redis
        admitted_in_redis = LIMIT
    settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS = 200
    _use_redis(settings, f"redis://127.0.0.1:{_closed_port()}/0")  # now this process cannot reach it
    yield admitted_in_redis
    wait_idle()
    _use_redis(settings, settings.REDIS_URL or "")


def statuses_of(http, count: int) -> list:
    answers = [http.post("/responses", json=BODY) for _ in range(count)]
    return [(a.status_code, a.headers.get("retry-after") is not None) for a in answers]


def test_database_counts_in_its_own_window(split, http, settings):
    assert settings.GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE == "database"  # the default
    got = statuses_of(http, 15)
    assert got == [(200, False)] * LIMIT + [(429, True)] * 5  # the limit again, in the database's window


def test_fail_closed_admits_nothing_without_redis(split, http, settings):
    settings.GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE = "fail_closed"
    answer = http.post("/responses", json=BODY)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert "rate limits cannot be checked" in answer.json()["error"]["message"]
    assert statuses_of(http, 14) == [(503, True)] * 14  # the split admits no more than Redis did


def test_fail_open_admits_everything_uncounted(split, http, settings):
    settings.GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE = "fail_open"
    assert statuses_of(http, 15) == [(200, False)] * 15
