"""A guardrail that leaves a request no endpoint (its providers refused, zero data retention required) shows its stage
in `service_metadata.pipeline`, as a content-filter block does (issue 37: it was `pipeline: []`)."""

from __future__ import annotations

import pytest

from tests.guardrails.test_enforcement_e2e import gateway, infer, key_guardrail  # noqa: F401  (fixtures)

METADATA = {"X-Service-Metadata": "enabled"}


@pytest.mark.parametrize(
    ("policy", "engine", "reason"),
    [
        ({"ignored_providers": ["fakeai", "fakechat"]}, "provider-policy", "provider ignored by guardrail"),
        ({"allowed_providers": ["anthropic"]}, "provider-policy", "provider not allowed by guardrail"),
        ({"enforce_zdr_vendor_a": True, "ignored_providers": ["fakechat"]}, "data-policy", "zero data retention"),
    ],
    ids=["ignored-providers", "allowed-providers", "zdr"],
)
def test_guardrail_that_leaves_no_endpoint_shows_its_stage(gateway, api, org, fake_upstream, policy, engine, reason):  # noqa: F811
    guardrail = key_guardrail(api, org, **policy)
    response = infer(gateway, org, headers=METADATA)
    assert response.status_code == 404, response.text
    body = response.json()
    assert reason in body["error"]["message"]
    stages = [s for s in body["service_metadata"]["pipeline"] if s["data"]["engines"] == [engine]]
    assert stages, body["service_metadata"]["pipeline"]
    stage = stages[0]
    assert stage["type"] == "guardrail" and stage["guardrail_id"] == guardrail["id"]
    assert stage["guardrail_scope"] == "api-key" and stage["data"]["action"] == "block"
    assert fake_upstream.requests == []
