"""POST /api/v1/responses/input_tokens (the openai SDK's `responses.input_tokens.count`): exact from an
openai-responses or anthropic-messages provider, the gateway's estimate for other formats; key auth and guardrails
apply; never charged, no Generation row."""

from __future__ import annotations

import httpx
import pytest
from openai import BadRequestError, NotFoundError

from inference.models import Generation
from tests.fakes.fake_upstream import count_answer
from tests.inference.conftest import add_endpoint
from tests.servertools.conftest import KEY_ENV, agent, agent_catalog, agent_sdk  # noqa: F401

INPUT = [{"type": "message", "role": "user", "content": "Count the tokens of this sentence, please."}]


def count(sdk, **body) -> dict:
    """`client.responses.input_tokens.count(**body)` of openai >= 2 (the pinned 1.x has no such method: the same
    request through the SDK's generic POST)."""
    return sdk.post("/responses/input_tokens", body=body, cast_to=object)


def test_exact_count_from_a_responses_provider(agent_sdk, agent_catalog):  # noqa: F811
    answer = count(agent_sdk, model="fakeai/agent", input=INPUT, instructions="Be brief.")
    sent = agent_catalog.requests[-1]
    assert sent.path == "/v1/responses/input_tokens"
    assert sent.body == {"model": "up-agent", "input": INPUT, "instructions": "Be brief."}
    assert sent.auth == "sk-fake-agent"
    assert answer == count_answer(sent.path, sent.raw) and answer["object"] == "response.input_tokens"
    assert Generation.objects.count() == 0


def test_exact_count_from_an_anthropic_provider(agent_sdk, agent_catalog):  # noqa: F811
    answer = count(agent_sdk, model="fakeclaude/agent", input=INPUT, instructions="Be brief.", max_output_tokens=99)
    sent = agent_catalog.requests[-1]
    assert sent.path == "/v1/messages/count_tokens" and sent.auth == "sk-fake-agent"
    assert sent.body["model"] == "up-claude" and sent.body["system"] == "Be brief."
    assert sent.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": INPUT[0]["content"]}]}]
    assert "max_tokens" not in sent.body and "stream" not in sent.body
    assert answer == {"object": "response.input_tokens", **count_answer(sent.path, sent.raw)}
    assert Generation.objects.count() == 0


@pytest.mark.parametrize("model", ["fakechat/agent"])
def test_estimate_for_other_formats(agent, agent_catalog, model):  # noqa: F811
    short = agent.post("/responses/input_tokens", json={"model": model, "input": "hi"})
    long = agent.post("/responses/input_tokens", json={"model": model, "input": "hi " * 400})
    assert short.status_code == long.status_code == 200
    assert short.headers["x-token-count"] == "estimate"
    assert 0 < short.json()["input_tokens"] < long.json()["input_tokens"] < 1200 / 4 + 100
    assert agent_catalog.requests == [] and Generation.objects.count() == 0


def test_provider_without_a_count_endpoint_is_estimated(agent, agent_catalog):  # noqa: F811
    base = {"base_url": agent_catalog.base_url, "api_key_env": KEY_ENV}
    add_endpoint("fakeai/nocount", "fakeai", api_format="openai-responses", upstream_model="fail-404", **base)
    response = agent.post("/responses/input_tokens", json={"model": "fakeai/nocount", "input": "hi"})
    assert response.status_code == 200 and response.headers["x-token-count"] == "estimate"


def test_key_auth_and_validation(gateway_server, agent_sdk, agent_catalog):  # noqa: F811
    refused = httpx.post(
        f"{gateway_server.url}/api/v1/responses/input_tokens",
        json={"model": "fakeai/agent", "input": "hi"},
        headers={"Authorization": "Bearer sk-wrong"},
    )
    assert refused.status_code == 401
    with pytest.raises(BadRequestError, match="temperature"):
        count(agent_sdk, model="fakeai/agent", input="hi", temperature=9)
    with pytest.raises(NotFoundError, match="does not exist"):
        count(agent_sdk, model="nope/none", input="hi")
    assert agent_catalog.requests == []


def test_guardrails_apply(api, org, agent, agent_catalog):  # noqa: F811
    from guardrails import middleware
    from tests.guardrails.test_enforcement_e2e import key_guardrail

    middleware._policies.clear()
    key_guardrail(api, org, allowed_models=["fakechat/agent"])
    refused = agent.post("/responses/input_tokens", json={"model": "fakeai/agent", "input": "hi"})
    assert refused.status_code == 403 and "fakeai/agent" in refused.json()["error"]["message"]
    assert agent.post("/responses/input_tokens", json={"model": "fakechat/agent", "input": "hi"}).status_code == 200
    assert agent_catalog.requests == []
