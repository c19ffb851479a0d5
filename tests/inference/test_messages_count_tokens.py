"""POST /api/v1/messages/count_tokens with the official anthropic SDK (`messages.count_tokens`, and the beta client's,
which adds `?beta=true`): the provider's exact count where its format has one (what the fake upstream got is
checked), the gateway's estimate otherwise; key auth and guardrails as /messages; nothing charged, no Generation."""

from __future__ import annotations

import anthropic
import httpx
import pytest

from tests.fakes.fake_upstream import count_answer
from tests.inference.conftest import wait_idle
from tests.inference.test_messages import TOOL, claude  # noqa: F401 (fixture)

MESSAGES = [{"role": "user", "content": "How many tokens is this?"}]
SYSTEM = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]


def _no_generation_nor_spend():
    from budgets.models import SpendCounter, SpendReservation
    from inference.models import Generation

    wait_idle()
    assert not Generation.objects.exists()
    assert not SpendCounter.objects.exists() and not SpendReservation.objects.exists()


@pytest.mark.parametrize("api_format", ["anthropic-messages", "openai-responses"])
def test_exact_count_from_the_providers_count_endpoint(claude, fake_upstream, api_format):  # noqa: F811
    client, add = claude
    model = add(api_format)
    counted = client.beta.messages.count_tokens(
        model=model,
        system=SYSTEM,
        messages=MESSAGES,
        tools=[TOOL],
        thinking={"type": "adaptive"},
        betas=["context-management-2025-06-27"],
        context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    )
    seen = fake_upstream.last
    assert counted.input_tokens == count_answer(seen.path, seen.raw)["input_tokens"] > 0
    assert seen.model == "fake-model" and "max_tokens" not in seen.body and "stream" not in seen.body
    if api_format == "anthropic-messages":
        assert seen.path == "/v1/messages/count_tokens"
        assert seen.body["system"] == SYSTEM and seen.body["messages"][0]["role"] == "user"
        assert seen.body["thinking"] == {"type": "adaptive"}
        assert seen.body["context_management"]["edits"][0]["keep"] == "all"
        assert "context-management-2025-06-27" in seen.headers["anthropic-beta"]
        assert seen.auth == "sk-platform-messages-0123456789"
    else:
        assert seen.path == "/v1/responses/input_tokens"
        assert seen.body["input"][0]["role"] == "system" and seen.body["tools"][0]["name"] == "get_weather"
        assert "max_output_tokens" not in seen.body and "store" not in seen.body
    _no_generation_nor_spend()


def test_estimate_where_the_format_has_no_count(claude, fake_upstream, gateway_server, org):  # noqa: F811
    client, add = claude
    model = add("openai-chat")
    counted = client.messages.count_tokens(model=model, messages=MESSAGES)
    assert counted.input_tokens > 0
    assert fake_upstream.requests == []
    raw = httpx.post(
        f"{gateway_server.url}/api/v1/messages/count_tokens?beta=true",
        headers={"x-api-key": org.inference_key, "anthropic-version": "2023-06-01"},
        json={"model": model, "messages": MESSAGES},
    )
    assert raw.status_code == 200 and raw.json() == {"input_tokens": counted.input_tokens}
    assert raw.headers["x-token-count"] == "estimate"
    _no_generation_nor_spend()


def test_a_failing_count_endpoint_falls_back_to_the_estimate(claude, fake_upstream, gateway_server, org):  # noqa: F811
    _, add = claude
    model = add("anthropic-messages", "fail-404")
    answer = httpx.post(
        f"{gateway_server.url}/api/v1/messages/count_tokens",
        headers={"x-api-key": org.inference_key},
        json={"model": model, "messages": MESSAGES},
    )
    assert answer.status_code == 200 and answer.headers["x-token-count"] == "estimate"
    assert answer.json()["input_tokens"] > 0 and fake_upstream.last.path == "/v1/messages/count_tokens"


def test_key_auth_validation_and_guardrails_as_on_messages(claude, fake_upstream, org):  # noqa: F811
    from guardrails import services

    client, add = claude
    model = add("anthropic-messages")
    bad = anthropic.Anthropic(base_url=str(client.base_url), api_key="sk-nope", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.count_tokens(model=model, messages=MESSAGES)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.count_tokens(model=model, messages=MESSAGES, extra_body={"max_tokens": 10})
    assert "max_tokens" in caught.value.message
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.count_tokens(model=model, messages=[{"role": "tool", "content": "x"}])
    assert "messages[0].role" in caught.value.message
    services.default_guardrail_update(workspace=org.workspace, data={"ignored_models": [model]})
    with pytest.raises(anthropic.PermissionDeniedError) as counted:
        client.messages.count_tokens(model=model, messages=MESSAGES)
    with pytest.raises(anthropic.PermissionDeniedError) as created:
        client.messages.create(model=model, max_tokens=10, messages=MESSAGES)
    assert counted.value.message == created.value.message
    assert fake_upstream.requests == []
    _no_generation_nor_spend()


def test_a_body_nested_too_deeply_is_a_400_naming_the_field(gateway_server, org):
    import httpx

    deep = {"type": "object", "properties": {}}
    cursor = deep
    for _ in range(300):
        cursor["properties"]["a"] = {"type": "object", "properties": {}}
        cursor = cursor["properties"]["a"]
    body = {
        "model": "echo/echo-1",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"name": "t", "input_schema": deep}],
    }
    answer = httpx.post(
        f"{gateway_server.url}/api/v1/messages/count_tokens", json=body, headers={"x-api-key": org.inference_key}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith("tools[0].input_schema.properties.a")
