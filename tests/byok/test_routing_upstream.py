"""BYOK against a real HTTP upstream (the loopback fake provider, which records the key it received):
rotation, key order, fallback on authentication failure, restrictions, and the key never leaking."""

from __future__ import annotations

import logging

import httpx
import orjson
import pytest

from byok.services import provider_credential_create
from tests.byok.helpers import database_dump
from tests.inference.conftest import add_endpoint, generations, wait_idle

pytestmark = pytest.mark.slow

PLATFORM_KEY = "sk-platform-Gw3Hn6Jq9Ks2Lt5Mv8Nx1Pz"
KEY_A = "sk-byok-first-Aa1Bb2Cc3Dd4Ee5Ff6Gg7"
KEY_B = "sk-byok-second-Hh8Ii9Jj0Kk1Ll2Mm3Nn4"
KEY_C = "sk-byok-fallback-Oo5Pp6Qq7Rr8Ss9Tt0Uu"
ROTATED = "sk-byok-rotated-Vv1Ww2Xx3Yy4Zz5Aa6Bb"
ALL_KEYS = (PLATFORM_KEY, KEY_A, KEY_B, KEY_C, ROTATED)


@pytest.fixture
def upstream(gateway_server, transactional_db, org, fake_upstream, monkeypatch):
    """A catalog provider `fakeai` (OpenAI Chat format) served by the fake upstream, with a platform key."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("BYOK_E2E_PLATFORM_KEY", PLATFORM_KEY)
    add_endpoint(
        "fakeai/model-a",
        "fakeai",
        api_format="openai-chat",
        base_url=fake_upstream.base_url,
        api_key_env="BYOK_E2E_PLATFORM_KEY",
    )
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        yield client, fake_upstream
    wait_idle()


def respond(client, key, **body):
    payload = {"model": "fakeai/model-a", "input": "hello", **body}
    headers = {"Authorization": f"Bearer {key}", "X-Service-Metadata": "enabled"}
    response = client.post("/responses", json=payload, headers=headers)
    wait_idle()  # accounting runs after the answer; SQLite cannot take the test's writes meanwhile
    return response


def add(org, raw_key, **kwargs):
    return provider_credential_create(
        organization=org.organization, provider="fakeai", raw_key=raw_key, workspace=org.workspace, **kwargs
    )


def keys_seen(fake) -> list[str]:
    return [r.auth for r in fake.requests]


def test_rotation_through_the_api_reaches_the_upstream_on_the_next_request(upstream, org):
    client, fake = upstream
    management = org.client()
    created = management.post("/api/v1/byok", {"provider": "fakeai", "key": KEY_A}, format="json").json()["data"]
    first = respond(client, org.inference_key)
    assert first.status_code == 200, first.text
    assert first.json()["usage"]["is_byok"] is True
    patched = management.patch(f"/api/v1/byok/{created['id']}", {"key": ROTATED}, format="json")
    assert patched.json()["data"]["label"] == "sk-...a6Bb"
    assert respond(client, org.inference_key).status_code == 200
    assert keys_seen(fake) == [KEY_A, ROTATED]


def test_order_then_fallback_keys_then_platform_on_authentication_failures(upstream, org):
    client, fake = upstream
    add(org, KEY_C, is_fallback=True, sort_order=0)
    add(org, KEY_B, sort_order=2)
    add(org, KEY_A, sort_order=1)

    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [KEY_A] and body["usage"]["is_byok"] is True

    fake.requests.clear()
    fake.rejected_keys = {KEY_A}
    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [KEY_A, KEY_B] and body["usage"]["is_byok"] is True
    assert [a["status"] for a in body["service_metadata"]["attempts"]] == ["auth", "success"]

    fake.requests.clear()
    fake.rejected_keys = {KEY_A, KEY_B}
    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [KEY_A, KEY_B, KEY_C] and body["service_metadata"]["is_byok"] is True

    fake.requests.clear()
    fake.rejected_keys = {KEY_A, KEY_B, KEY_C}
    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [KEY_A, KEY_B, KEY_C, PLATFORM_KEY]
    assert body["usage"]["is_byok"] is False and body["service_metadata"]["is_byok"] is False
    assert [g.is_byok for g in generations(4)] == [True, True, True, False]


def test_restrictions_decide_whether_the_credential_is_used(upstream, org):
    client, fake = upstream
    add(org, KEY_A, allowed_api_key_hashes=[org.management_hash])
    add(org, KEY_B, allowed_models=["fakeai/other-model"])
    add(org, KEY_C, allowed_user_ids=["someone-else"])
    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [PLATFORM_KEY] and body["usage"]["is_byok"] is False

    fake.requests.clear()
    add(org, ROTATED, allowed_api_key_hashes=[org.inference_hash], allowed_models=["fakeai/model-a"])
    body = respond(client, org.inference_key).json()
    assert keys_seen(fake) == [ROTATED] and body["usage"]["is_byok"] is True


@pytest.mark.parametrize("api_format", ["openai-responses", "openai-chat", "anthropic-messages"])
def test_every_adapter_sends_the_byok_key(gateway_server, transactional_db, org, fake_upstream, api_format):
    from inference.routing import clear_caches

    clear_caches()  # the flushed test database restarts the policy version
    slug = f"fake-{api_format}"
    add_endpoint(f"{slug}/model-x", slug, api_format=api_format, base_url=fake_upstream.base_url)
    provider_credential_create(organization=org.organization, provider=slug, raw_key=KEY_A, workspace=None)
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        for stream in (False, True):
            response = respond(client, org.inference_key, model=f"{slug}/model-x", stream=stream)
            assert response.status_code == 200, response.text
    assert keys_seen(fake_upstream) == [KEY_A, KEY_A]
    assert [g.is_byok for g in generations(2)] == [True, True]


def test_the_keys_leak_nowhere_even_when_the_upstream_quotes_them(upstream, org, caplog):
    client, fake = upstream
    caplog.set_level(logging.DEBUG)
    add(org, KEY_A)
    add(org, KEY_B)
    fake.rejected_keys = set(ALL_KEYS)
    failed = respond(client, org.inference_key)
    assert failed.status_code == 502 and failed.json()["error"]["metadata"]["error_type"] == "authentication"
    assert keys_seen(fake) == [KEY_A, KEY_B, PLATFORM_KEY]

    fake.rejected_keys = set()
    debug = respond(client, org.inference_key, stream=True, debug={"echo_upstream_body": True})
    assert debug.status_code == 200
    frames = [orjson.loads(line[6:]) for line in debug.text.splitlines() if line.startswith("data: {")]
    assert frames[0]["type"] == "response.debug"
    assert frames[0]["debug"]["echo_upstream_body"]["model"] == "model-a"
    streamed = respond(client, org.inference_key, stream=True)
    wait_idle()
    generations(3)
    texts = [failed.text, debug.text, streamed.text, caplog.text, *(r.getMessage() for r in caplog.records)]
    texts += [str(g.__dict__) for g in generations(3)]
    texts.append(database_dump())
    assert [k for k in ALL_KEYS if any(k in t for t in texts)] == []
