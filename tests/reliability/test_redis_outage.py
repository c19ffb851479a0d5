"""Issue 18 rows 3, 4 and 18: Redis is an accelerator, not a single point of failure.

- Redis refused (a closed port; no Redis server needed): inference, rankings and management writes are
  answered (policy versions read from the database rows, rankings counted in the database); a committed
  write never answers 500, and its change applies on the next request.
- Redis black-holed (a loopback proxy that stops forwarding; needs REDIS_URL): the same, within the
  client timeouts.
- A push that failed is sent again once Redis is back; a change whose push never came is read from the rows
  within GATEWAY_POLICY_RECHECK_MS (needs REDIS_URL).
- One organization's change drops only its own cache entries; random bearer tokens do not push known keys
  out nor flush the cache.
"""

from __future__ import annotations

import os
import secrets
import time

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.db.models import F

from accounts import middleware as auth_middleware
from accounts.models import ApiKey, PolicyVersion
from gateway_project import policy_versions
from gateway_project.policy_cache import listener, org_scope, publisher
from rankings import rate_limits
from tests.conftest import free_port, make_org
from tests.fakes.tcp_blackhole import BlackholeProxy as TcpProxy

pytestmark = pytest.mark.django_db(transaction=True)
REAL_REDIS = os.environ.get("REDIS_URL", "")
needs_redis = pytest.mark.skipif(not REAL_REDIS, reason="needs REDIS_URL")
BODY = {"model": "echo/echo-1", "input": "hi"}


def use_redis(settings, url: str) -> None:
    """Point this process's Redis clients at `url` (they are created lazily from settings.REDIS_URL)."""
    listener.stop()
    settings.REDIS_URL = url
    publisher._client = None
    publisher.missed.clear()
    rate_limits._script = None
    policy_versions.rows.forget()


@pytest.fixture
def redis_url_restored(settings):
    yield settings
    use_redis(settings, REAL_REDIS)


def wait_until(predicate, timeout: float = 5.0) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.01)
    return time.monotonic() - started


def management(gateway_server, org) -> httpx.Client:
    return httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.management_key}"}, timeout=30
    )


def assert_served_without_redis(http, gateway_server, org) -> None:
    statuses = [http.post("/responses", json=BODY).status_code for _ in range(30)]
    assert statuses == [200] * 30
    ranking = http.get("/datasets/rankings-daily")
    assert ranking.status_code == 200, ranking.text
    with management(gateway_server, org) as api:
        created = api.post("/keys", json={"name": "during the outage"})
        assert created.status_code == 201, created.text
        new_key = created.json()["key"]
        assert http.post("/responses", json=BODY, headers={"Authorization": f"Bearer {new_key}"}).status_code == 200
        disabled = api.patch(f"/keys/{org.inference_hash}", json={"disabled": True})
        assert disabled.status_code == 200, disabled.text
    assert ApiKey.objects.get(hash=org.inference_hash).disabled  # committed, and answered as such
    # The change applies to the next request (this process at once; others within GATEWAY_POLICY_REFRESH_MS).
    assert http.post("/responses", json=BODY).status_code == 401


def test_refused_redis_serves_inference_rankings_and_management(http, gateway_server, org, redis_url_restored):
    use_redis(redis_url_restored, f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    assert_served_without_redis(http, gateway_server, org)


@needs_redis
def test_black_holed_redis_serves_within_the_client_timeouts(http, gateway_server, org, redis_url_restored):
    host, port = REAL_REDIS.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port)).start()
    try:
        use_redis(redis_url_restored, f"redis://127.0.0.1:{proxy.port}/{REAL_REDIS.rsplit('/', 1)[1]}")
        assert http.post("/responses", json=BODY).status_code == 200
        wait_until(lambda: listener.subscribed)
        proxy.blackhole()
        started = time.monotonic()
        assert_served_without_redis(http, gateway_server, org)
        assert time.monotonic() - started < 15  # each Redis call gives up after GATEWAY_REDIS_TIMEOUT_SECONDS
    finally:
        proxy.stop()


@needs_redis
def test_a_missed_push_is_sent_again_when_redis_is_back(http, gateway_server, org, redis_url_restored):
    import redis

    host, port = REAL_REDIS.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port)).start()
    watcher = redis.Redis.from_url(REAL_REDIS).pubsub()
    watcher.subscribe(policy_versions.REDIS_CHANNEL)
    try:
        use_redis(redis_url_restored, f"redis://127.0.0.1:{proxy.port}/{REAL_REDIS.rsplit('/', 1)[1]}")
        assert http.post("/responses", json=BODY).status_code == 200
        wait_until(lambda: listener.subscribed)
        proxy.refuse()
        wait_until(lambda: not listener.subscribed)
        with management(gateway_server, org) as api:
            assert api.patch(f"/keys/{org.inference_hash}", json={"disabled": True}).status_code == 200
        assert org_scope(org.organization.id) in publisher.missed
        proxy.start(proxy.port)  # Redis is back
        wait_until(lambda: not publisher.missed)
        seen = set()
        deadline = time.monotonic() + 5
        while org_scope(org.organization.id) not in seen and time.monotonic() < deadline:
            message = watcher.get_message(timeout=0.5)
            if message and message["type"] == "message":
                seen.add(message["data"].decode())
        assert org_scope(org.organization.id) in seen  # the other processes are told after all
    finally:
        watcher.close()
        proxy.stop()


@needs_redis
def test_a_change_whose_push_never_came_applies_within_the_recheck(http, org, settings):
    settings.GATEWAY_POLICY_RECHECK_MS = 300
    assert http.post("/responses", json=BODY).status_code == 200
    wait_until(lambda: listener.subscribed)
    assert http.post("/responses", json=BODY).status_code == 200  # cached now
    # Another process disabled the key and bumped the row, but its push to Redis failed.
    ApiKey.objects.filter(hash=org.inference_hash).update(disabled=True)
    PolicyVersion.objects.filter(name=org_scope(org.organization.id)).update(version=F("version") + 1)
    if not PolicyVersion.objects.filter(name=org_scope(org.organization.id)).exists():
        PolicyVersion.objects.create(name=org_scope(org.organization.id), version=1)
    waited = wait_until(lambda: http.post("/responses", json=BODY).status_code == 401, timeout=5)
    assert waited < 2


def test_one_organizations_change_keeps_the_others_cache(http, gateway_server, org):
    other = make_org("Initech")
    with httpx.Client(base_url=http.base_url, headers={"Authorization": f"Bearer {other.inference_key}"}) as theirs:
        assert theirs.post("/responses", json=BODY).status_code == 200
        assert http.post("/responses", json=BODY).status_code == 200
        version = async_to_sync(policy_versions.current_policy_version)()
        principals = auth_middleware._principals
        assert principals.contains(version, org.inference_hash) and principals.contains(version, other.inference_hash)
        with management(gateway_server, org) as api:
            assert api.post("/workspaces", json={"name": "Research", "slug": "research"}).status_code == 201
        assert async_to_sync(policy_versions.current_policy_version)() == version  # no fleet-wide flush
        assert principals.contains(version, other.inference_hash)  # the other tenant keeps its entries
        assert not principals.contains(version, org.inference_hash)  # the changed tenant's are reloaded
        assert theirs.post("/responses", json=BODY).status_code == 200


def test_random_tokens_neither_evict_known_keys_nor_flush_the_cache(http, monkeypatch, settings):
    monkeypatch.setattr(auth_middleware._unknown_keys, "max_entries", 20)
    settings.GATEWAY_POLICY_REFRESH_MS = settings.GATEWAY_POLICY_RECHECK_MS = 60_000  # no row read mid-test
    settings.GATEWAY_AUTH_FAILURES_PER_MINUTE = (
        0  # the per-address limit (accounts/auth_throttle.py) is not the subject
    )
    policy_versions.rows.forget()
    assert http.post("/responses", json=BODY).status_code == 200
    version = async_to_sync(policy_versions.current_policy_version)()
    for _ in range(60):
        token = secrets.token_urlsafe(24)
        assert http.post("/responses", json=BODY, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert len(auth_middleware._unknown_keys) == 20  # bounded, oldest out
    principal_hashes = [
        key for key in auth_middleware._principals._entries if auth_middleware._principals._entries[key]
    ]
    assert principal_hashes and all(auth_middleware._principals.contains(version, k) for k in principal_hashes)
