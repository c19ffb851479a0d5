"""The router SDK's `generations.get_generation()` and `credits.get_credits()` over the live gateway, for a
request made here: every field the SDK requires parses, and the values are the request's own."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from accounts.models import ApiKey
from inference.models import Generation
from tests.inference.conftest import add_endpoint, generations

REFERER = "https://app.example/chat?session=1"


@pytest.fixture
def echo(transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    return add_endpoint("echo/echo-1", "echo", prompt_price="0.000001", completion_price="0.000002")


def _chat(gateway_server, org) -> str:
    response = httpx.post(
        f"{gateway_server.url}/api/v1/chat/completions",
        json={"model": "echo/echo-1", "messages": [{"role": "user", "content": "one two three"}], "stream": True},
        headers={"Authorization": f"Bearer {org.inference_key}", "HTTP-Referer": REFERER, "User-Agent": "tester/1"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.headers["x-request-id"]


def test_get_generation_reads_the_request_record(gateway_server, org, inference_sdk, echo):
    request_id = _chat(gateway_server, org)
    (row,) = generations(1)
    data = inference_sdk.generations.get_generation(id=request_id).data
    assert data.id == data.request_id == request_id == str(row.id)
    assert (data.model, data.provider_name, data.api_type, data.data_region) == (
        "echo/echo-1",
        "Echo",
        "completions",
        "global",
    )
    assert (data.http_referer, data.origin, data.user_agent) == (REFERER, "https://app.example/", "tester/1")
    assert data.streamed is True and data.cancelled is False and data.is_byok is False
    assert data.latency == row.latency_ms and data.generation_time == row.latency_ms - row.ttft_ms
    assert (data.tokens_prompt, data.native_tokens_prompt) == (row.input_tokens, row.input_tokens)
    assert (data.tokens_completion, data.native_tokens_completion) == (row.output_tokens, row.output_tokens)
    assert data.native_tokens_cached == 0 and data.cache_discount == 0.0  # no cached input
    cost = float(row.cost)
    assert cost > 0 and data.total_cost == data.usage == data.upstream_inference_cost == cost
    assert cost == pytest.approx(row.input_tokens * 0.000001 + row.output_tokens * 0.000002)
    (attempt,) = data.provider_responses
    assert (attempt.status, attempt.endpoint_id, attempt.provider_name) == (200, str(echo.id), "Echo")
    assert data.router is None and data.app_id is None and data.external_user is None
    assert data.workspace_id == str(org.workspace.id) and data.finish_reason


def test_get_generation_of_an_estimated_usage_has_no_native_counts(gateway_server, org, inference_sdk, echo):
    request_id = _chat(gateway_server, org)
    generations(1)
    Generation.objects.filter(id=request_id).update(usage_estimated=True)
    data = inference_sdk.generations.get_generation(id=request_id).data
    assert data.tokens_prompt > 0 and data.native_tokens_prompt is None and data.native_tokens_completion is None


def test_credits_are_the_limit_that_applies_first(gateway_server, org, inference_sdk, sdk, echo):
    assert inference_sdk.credits.get_credits().data.total_credits == -1  # no limit applies
    _chat(gateway_server, org)
    (row,) = generations(1)
    unlimited = inference_sdk.credits.get_credits().data
    assert unlimited.total_credits == -1 and unlimited.total_usage == pytest.approx(float(row.cost))

    sdk.api_keys.update(hash=org.inference_hash, limit=5)
    limited = inference_sdk.credits.get_credits().data
    assert limited.total_credits == 5 and limited.total_usage == pytest.approx(float(row.cost))
    raw = httpx.get(
        f"{gateway_server.url}/api/v1/credits", headers={"Authorization": f"Bearer {org.inference_key}"}
    ).json()["data"]
    assert raw["budget"]["scope"] == "key_limit" and raw["budget"]["reset_interval"] is None
    assert Decimal(str(raw["total_credits"])) == ApiKey.objects.get(hash=org.inference_hash).limit
