"""The policy-version channel is per Redis database: a bump published by a gateway on another database of the
same Redis server (another deployment, another test run) does not flush this process's caches."""

from __future__ import annotations

import time

import pytest
from redis.connection import parse_url

from gateway_project.policy_cache import REDIS_CHANNEL, local_version
from tests.accounts.test_policy_version import needs_redis, redis_client, redis_url, wait_until  # noqa: F401


@needs_redis
@pytest.mark.django_db
def test_a_bump_on_another_databases_channel_is_ignored(redis_client):  # noqa: F811
    db = parse_url(redis_url).get("db", 0)
    assert f"gateway:policy-version:{db}" == REDIS_CHANNEL
    before = local_version.value
    for other in (db + 1, db + 2):
        redis_client.publish(f"gateway:policy-version:{other}", "policy")
    redis_client.publish("gateway:policy-version", "policy")  # the channel of earlier releases
    time.sleep(0.3)
    assert local_version.value == before
    redis_client.publish(REDIS_CHANNEL, "policy")  # this database's channel still works
    wait_until(lambda: local_version.value != before)
