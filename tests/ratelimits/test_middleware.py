"""Rate limits seen by an application: the official OpenAI SDK against the loopback gateway."""

from __future__ import annotations

import httpx
import openai
import pytest

from accounts import services
from accounts.models import ApiKey, Workspace
from tests.inference.conftest import wait_idle

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": "echo/echo-1", "input": "hello there", "max_output_tokens": 50}
TRIOS = ("limit", "remaining", "reset")


def set_limits(org, key_hash: str, **fields) -> None:
    response = org.client().patch(f"/api/v1/keys/{key_hash}", fields, format="json")
    assert response.status_code == 200, response.json()


def new_key(org, **fields) -> str:
    wait_idle()  # SQLite in memory: no write from here while the server's accounting writes
    organization = ApiKey.objects.get(hash=org.inference_hash).organization
    return services.api_key_create(organization=organization, name="k", **fields).raw_key


def test_over_the_limit_is_429_with_retry_after_and_headers(sdk, org):
    set_limits(org, org.inference_hash, requests_per_minute=2)
    first = sdk.responses.with_raw_response.create(**BODY)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert first.headers["x-ratelimit-reset-requests"].endswith("s")
    assert "x-ratelimit-limit-tokens" not in first.headers  # no token limit on this key
    second = sdk.responses.with_raw_response.create(**BODY)
    assert second.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(openai.RateLimitError) as refused:
        sdk.responses.create(**BODY)
    response = refused.value.response
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == 429 and "2 requests per minute" in error["message"]
    assert error["metadata"]["rate_limit"]["scope"] == "api-key"
    assert 1 <= int(response.headers["retry-after"]) <= 60
    assert response.headers["x-ratelimit-limit-requests"] == "2"
    assert response.headers["x-ratelimit-remaining-requests"] == "0"
    # Another key of the organization is not limited, and shows no rate-limit headers.
    other = openai.OpenAI(base_url=str(sdk.base_url), api_key=new_key(org), max_retries=0)
    answer = other.responses.with_raw_response.create(**BODY)
    assert answer.http_response.status_code == 200 and "x-ratelimit-limit-requests" not in answer.headers


def test_headers_on_streams_and_errors(sdk, http, org):
    set_limits(org, org.inference_hash, requests_per_minute=100, tokens_per_minute=1_000_000)
    with sdk.responses.with_streaming_response.create(**BODY, stream=True) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for dimension in ("requests", "tokens"):
            for name in TRIOS:
                assert stream.headers[f"x-ratelimit-{name}-{dimension}"]
        events = list(stream.iter_lines())
    assert any("response.completed" in line for line in events)
    failed = http.post("/responses", json={**BODY, "model": "nobody/unknown-model"})
    assert failed.status_code >= 400 and failed.json()["error"]["code"] == failed.status_code
    assert failed.headers["x-ratelimit-limit-requests"] == "100"
    assert failed.headers["x-ratelimit-limit-tokens"] == "1000000"


def test_tokens_are_held_from_the_estimate_then_settled_to_usage(sdk, org):
    tpm = 100_000
    set_limits(org, org.inference_hash, tokens_per_minute=tpm)
    first = sdk.responses.with_raw_response.create(**BODY)
    held = tpm - int(first.headers["x-ratelimit-remaining-tokens"])
    usage = first.parse().usage
    assert held >= BODY["max_output_tokens"] + 1 > usage.total_tokens  # the worst case, not the usage
    wait_idle()  # settled after the answer went out
    second = sdk.responses.with_raw_response.create(**BODY)
    assert tpm - int(second.headers["x-ratelimit-remaining-tokens"]) == usage.total_tokens + held


def test_a_request_larger_than_the_token_limit_is_refused(sdk, org):
    set_limits(org, org.inference_hash, tokens_per_minute=20)
    with pytest.raises(openai.RateLimitError) as refused:
        sdk.responses.create(**BODY)
    assert "Request too large" in refused.value.response.json()["error"]["message"]
    assert refused.value.response.headers["x-ratelimit-limit-tokens"] == "20"


def test_workspace_limit_is_shared_by_its_keys(gateway_server, org, echo_catalog):
    Workspace.objects.filter(pk=org.workspace.id).update(requests_per_minute=3)
    from gateway_project.policy_cache import bump_policy_version

    bump_policy_version()
    keys = [org.inference_key, new_key(org)]
    statuses = []
    for i in range(6):
        response = httpx.post(
            f"{gateway_server.url}/api/v1/responses",
            json=BODY,
            headers={"Authorization": f"Bearer {keys[i % 2]}"},
            timeout=30,
        )
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert response.json()["error"]["metadata"]["rate_limit"]["scope"] == "workspace"
    wait_idle()
    assert statuses == [200, 200, 200, 429, 429, 429]


def test_other_wire_formats_are_limited_the_same(sdk, org):
    """Chat Completions and Messages go through the same chain: the same window, headers and 429."""
    set_limits(org, org.inference_hash, requests_per_minute=2)
    chat = sdk.chat.completions.with_raw_response.create(
        model="echo/echo-1", messages=[{"role": "user", "content": "hello"}], max_tokens=5
    )
    assert chat.headers["x-ratelimit-limit-requests"] == "2"
    assert chat.headers["x-ratelimit-remaining-requests"] == "1"
    sdk.responses.create(**BODY)
    response = httpx.post(
        f"{str(sdk.base_url).rstrip('/')}/messages",
        json={"model": "echo/echo-1", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-api-key": org.inference_key, "Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    assert response.status_code == 429 and response.headers["retry-after"]
    assert response.headers["x-ratelimit-remaining-requests"] == "0"
