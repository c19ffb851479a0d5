"""Unauthenticated floods: random bearer keys from one address get 429 and never evict known keys."""

from __future__ import annotations

import secrets

import httpx
import openai
import pytest
from rest_framework.test import APIClient

from accounts import middleware as key_auth
from gateway_project.policy_cache import bump_policy_version

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": "echo/echo-1", "input": "hello", "max_output_tokens": 5}


def random_key() -> str:
    return "sk-gw-v1-" + secrets.token_hex(32)


def test_data_plane_flood_is_429_after_the_limit_and_known_keys_still_work(sdk, gateway_server, settings):
    settings.GATEWAY_AUTH_FAILURES_PER_MINUTE = 5
    assert sdk.responses.create(**BODY).status == "completed"  # the real key is known to the process now
    url = f"{gateway_server.url}/api/v1/responses"
    statuses = []
    for _ in range(8):
        response = httpx.post(url, json=BODY, headers={"Authorization": f"Bearer {random_key()}"})
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert response.json()["error"]["code"] == 429
            assert 1 <= int(response.headers["retry-after"]) <= 60
    assert statuses == [401] * 5 + [429] * 3
    assert sdk.responses.create(**BODY).status == "completed"  # from the same address, a known key passes
    bump_policy_version()  # any change empties the key cache: a key that authenticated before still passes
    assert sdk.responses.create(**BODY).status == "completed"
    with pytest.raises(openai.RateLimitError):  # a key unknown to the process is not looked up meanwhile
        openai.OpenAI(base_url=str(sdk.base_url), api_key=random_key(), max_retries=0).responses.create(**BODY)


def test_random_keys_never_evict_known_keys(sdk, gateway_server, settings, monkeypatch):
    settings.GATEWAY_AUTH_FAILURES_PER_MINUTE = 0  # off: every random key reaches the caches
    monkeypatch.setattr(key_auth._unknown_keys, "max_entries", 20)
    monkeypatch.setattr(key_auth._principals, "max_entries", 20)
    assert sdk.responses.create(**BODY).status == "completed"
    cached = dict(key_auth._principals._entries)
    assert cached  # the real key
    url = f"{gateway_server.url}/api/v1/responses"
    with httpx.Client() as client:
        for _ in range(60):  # 3x both caches' size
            response = client.post(url, json=BODY, headers={"Authorization": f"Bearer {random_key()}"})
            assert response.status_code == 401
    # Unknown keys went to their own cache: nothing of theirs is among the principals, and the real key was not
    # pushed out by them (a policy-version change from an earlier test's writes may still empty the cache whole).
    assert key_auth._principals._entries in (cached, {})
    assert len(key_auth._unknown_keys._entries) <= 20
    assert sdk.responses.create(**BODY).status == "completed"


def test_management_plane_flood_is_429_after_the_limit(org, settings):
    settings.GATEWAY_AUTH_FAILURES_PER_MINUTE = 3
    statuses = []
    for _ in range(5):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {random_key()}")
        response = client.get("/api/v1/keys")
        statuses.append(response.status_code)
    assert statuses == [401, 401, 401, 429, 429]
    assert 1 <= int(response["Retry-After"]) <= 60 and response.json()["error"]["code"] == 429
    scim = APIClient()
    scim.credentials(HTTP_AUTHORIZATION=f"Bearer {random_key()}")
    response = scim.get("/api/v1/scim/v2/Users")
    assert response.status_code == 429 and response["Retry-After"]
    management = APIClient()  # a key that authenticated before passes from the same address
    management.credentials(HTTP_AUTHORIZATION=f"Bearer {org.management_key}")
    assert management.get("/api/v1/keys").status_code == 429  # never authenticated here yet: not looked up
    # Another address is not affected.
    other = APIClient(REMOTE_ADDR="10.1.2.3")
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {org.management_key}")
    assert other.get("/api/v1/keys").status_code == 200
    assert management.get("/api/v1/keys").status_code == 200  # now it did
