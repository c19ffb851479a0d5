"""How a process learns that cached policy changed (gateway_project/policy_cache.py), without a read per request.

Without Redis: a change made in this process applies at once; one made elsewhere (the version row moved under
the process) is read at most GATEWAY_POLICY_REFRESH_MS later. With Redis (these tests need REDIS_URL): changes
are pushed on a channel to a listener thread, and while the listener is not subscribed requests read the
version rows as without Redis.
"""

from __future__ import annotations

import os
import time

import pytest
from asgiref.sync import async_to_sync
from django.db.models import F

from accounts.models import PolicyVersion
from gateway_project.policy_cache import (
    REDIS_CHANNEL,
    bump_policy_version,
    current_policy_version,
    listener,
    local_version,
)

version = async_to_sync(current_policy_version)


def move_row_elsewhere() -> None:
    """What another process's bump does to the version row (this process is not told)."""
    if not PolicyVersion.objects.filter(name="policy").update(version=F("version") + 1):
        PolicyVersion.objects.create(name="policy", version=1)


@pytest.fixture
def no_redis(settings):
    settings.REDIS_URL = ""
    local_version.reset()
    yield settings
    local_version.reset()


@pytest.mark.django_db
def test_without_redis_a_change_in_this_process_applies_to_the_next_request(no_redis):
    no_redis.GATEWAY_POLICY_REFRESH_MS = 60_000
    before = version()
    assert version() == before  # no change, no read: the same version
    bump_policy_version()
    after = version()
    assert after != before
    assert version() == after


@pytest.mark.django_db
def test_without_redis_a_change_elsewhere_is_read_within_the_refresh_interval(no_redis):
    no_redis.GATEWAY_POLICY_REFRESH_MS = 200
    before = version()
    move_row_elsewhere()
    assert version() == before  # not read again yet
    time.sleep(0.25)
    assert version() != before


@pytest.mark.django_db
def test_without_redis_refresh_zero_reads_the_version_on_every_request(no_redis):
    no_redis.GATEWAY_POLICY_REFRESH_MS = 0
    before = version()
    move_row_elsewhere()
    assert version() != before


@pytest.mark.django_db
def test_without_redis_no_read_happens_between_refreshes(no_redis, django_assert_num_queries):
    no_redis.GATEWAY_POLICY_REFRESH_MS = 60_000
    version()
    with django_assert_num_queries(0):
        for _ in range(50):
            version()


redis_url = os.environ.get("REDIS_URL", "")
needs_redis = pytest.mark.skipif(not redis_url, reason="needs REDIS_URL")


def other_process_bump(client) -> None:
    """What another process's global bump does: the row moves in its transaction, then a PUBLISH."""
    move_row_elsewhere()
    client.publish(REDIS_CHANNEL, "policy")


def wait_until(predicate, timeout: float = 5.0) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.0005)
    return time.monotonic() - started


@pytest.fixture
def redis_client(settings):
    import redis

    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    version()  # starts the listener if needed
    wait_until(lambda: listener.subscribed)
    yield client
    client.close()


@needs_redis
@pytest.mark.django_db
def test_with_redis_a_change_elsewhere_is_pushed_without_a_read_per_request(redis_client, django_assert_num_queries):
    before = version()
    other_process_bump(redis_client)
    waited = wait_until(lambda: version() != before)
    assert waited < 1.0
    after = version()
    with django_assert_num_queries(0):
        assert version() == after  # nothing moved: the same version, no read


@needs_redis
@pytest.mark.django_db
def test_with_redis_pushes_arrive_within_milliseconds(redis_client):
    delays = []
    for _ in range(50):
        before = local_version.value
        started = time.perf_counter()
        redis_client.publish(REDIS_CHANNEL, "policy")
        while local_version.value == before:
            time.sleep(0.0001)
        delays.append(time.perf_counter() - started)
    delays.sort()
    assert delays[len(delays) // 2] < 0.05, delays  # measured well under 1 ms on an idle machine


@needs_redis
@pytest.mark.django_db
def test_with_redis_a_change_in_this_process_applies_at_once(redis_client):
    before = version()
    bump_policy_version()
    assert version() != before  # no wait for the push


@needs_redis
@pytest.mark.django_db
def test_with_redis_the_rows_are_read_while_the_listener_is_down(redis_client, settings, monkeypatch):
    settings.GATEWAY_POLICY_REFRESH_MS = 0
    listener.stop()
    monkeypatch.setattr(listener, "ensure_started", lambda: None)  # Redis stays unreachable for this process
    try:
        wait_until(lambda: not listener.subscribed)
        before = version()
        move_row_elsewhere()  # changed without a push: only a read of the rows can see it
        assert version() != before
    finally:
        monkeypatch.undo()
        version()  # restarts the listener
        wait_until(lambda: listener.subscribed)


@needs_redis
@pytest.mark.django_db
def test_with_redis_a_resubscription_counts_as_a_change(redis_client):
    before = version()
    listener.stop()
    wait_until(lambda: not listener.subscribed)
    listener.ensure_started()
    wait_until(lambda: listener.subscribed)
    assert version() != before
