"""BYOK through the real data plane (POST /api/v1/responses on the loopback gateway).

The echo provider (in-process) shows which credential served: `usage.is_byok`, `service_metadata.is_byok`
and `Generation.is_byok`.
"""

from __future__ import annotations

import httpx
import orjson
import pytest

from byok.services import provider_credential_create
from tests.inference.conftest import add_endpoint, generations, wait_idle

pytestmark = pytest.mark.slow

ECHO_KEY = "sk-echo-byok-Nd4Kp7Rs2Vx9Lm5Qz8WtYb"


@pytest.fixture
def gateway(gateway_server, transactional_db, org):
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        yield client
    wait_idle()


def respond(client, key, *, stream=False, **body):
    payload = {"model": "echo/echo-1", "input": "hello", "stream": stream, **body}
    response = client.post(
        "/responses",
        json=payload,
        headers={"Authorization": f"Bearer {key}", "X-Service-Metadata": "enabled"},
    )
    wait_idle()  # accounting runs after the answer; SQLite cannot take the test's writes meanwhile
    return response


def sse_events(text: str) -> list:
    return [
        orjson.loads(line[6:])
        for frame in text.split("\n\n")
        for line in frame.splitlines()
        if line.startswith("data: {")
    ]


def test_a_byok_credential_serves_and_is_marked_everywhere(gateway, org):
    provider_credential_create(organization=org.organization, provider="echo", raw_key=ECHO_KEY, workspace=None)
    response = respond(gateway, org.inference_key)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["usage"]["is_byok"] is True
    assert body["service_metadata"]["is_byok"] is True
    assert ECHO_KEY not in response.text
    (generation,) = generations(1)
    assert generation.is_byok is True and generation.status == "completed"


def test_streamed_usage_says_byok(gateway, org):
    provider_credential_create(organization=org.organization, provider="echo", raw_key=ECHO_KEY, workspace=None)
    response = respond(gateway, org.inference_key, stream=True)
    assert response.status_code == 200
    completed = [e for e in sse_events(response.text) if e["type"] == "response.completed"]
    assert completed[0]["response"]["usage"]["is_byok"] is True
    assert ECHO_KEY not in response.text
    assert generations(1)[0].is_byok is True


def test_a_key_hash_not_allowed_does_not_use_the_credential(gateway, org):
    provider_credential_create(
        organization=org.organization,
        provider="echo",
        raw_key=ECHO_KEY,
        workspace=None,
        allowed_api_key_hashes=[org.management_hash],
    )
    body = respond(gateway, org.inference_key).json()
    assert body["usage"]["is_byok"] is False and body["service_metadata"]["is_byok"] is False
    assert generations(1)[0].is_byok is False


def test_disabling_through_the_api_applies_to_the_next_request(gateway, org):
    management = org.client()
    created = management.post(
        "/api/v1/byok", {"provider": "echo", "key": ECHO_KEY, "workspace_id": None}, format="json"
    ).json()["data"]
    assert respond(gateway, org.inference_key).json()["usage"]["is_byok"] is True
    management.patch(f"/api/v1/byok/{created['id']}", {"disabled": True}, format="json")
    assert respond(gateway, org.inference_key).json()["usage"]["is_byok"] is False
    management.patch(f"/api/v1/byok/{created['id']}", {"disabled": False}, format="json")
    assert respond(gateway, org.inference_key).json()["usage"]["is_byok"] is True
    management.delete(f"/api/v1/byok/{created['id']}")
    assert respond(gateway, org.inference_key).json()["usage"]["is_byok"] is False
    assert [g.is_byok for g in generations(4)] == [
        True,
        False,
        True,
        False,
    ]
