"""GET /api/v1/generation?id=<id>: the accounting record of a request, by the id its answer carried or its
x-request-id, within the caller's organization only (over the loopback server)."""

from __future__ import annotations

import uuid
from decimal import Decimal

import httpx
import pytest

from tests.inference.conftest import add_endpoint, generations

KEY = "sk-platform-generation-0123456789"


def _lookup(gateway_server, key: str, **params) -> httpx.Response:
    return httpx.get(
        f"{gateway_server.url}/api/v1/generation", params=params, headers={"Authorization": f"Bearer {key}"}
    )


def test_lookup_by_response_id_and_request_id(gateway_server, org, sdk, fake_upstream, monkeypatch):
    from inference.routing import clear_caches

    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)
    add_endpoint(
        "fake/gen-model",
        "fake-responses",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_PROVIDER_KEY",
        prompt_price="0.000001",
        completion_price="0.000002",
    )
    clear_caches()
    raw = sdk.responses.with_raw_response.create(
        model="fake/gen-model", input="Say hello", extra_body={"session_id": "s-1"}
    )
    response = raw.parse()
    request_id = raw.headers["x-request-id"]
    assert response.id == f"resp_{request_id}"
    generations(1)

    by_response_id = _lookup(gateway_server, org.inference_key, id=response.id)
    assert by_response_id.status_code == 200, by_response_id.text
    data = by_response_id.json()["data"]
    assert data == _lookup(gateway_server, org.management_key, id=request_id).json()["data"]
    assert data["id"] == request_id
    assert data["model"] == data["requested_model"] == "fake/gen-model"
    assert data["provider"] == "fake-responses" and data["upstream_id"]
    assert data["ingress_format"] == "responses"
    assert (data["status"], data["finish_reason"], data["streamed"], data["cancelled"]) == (
        "completed",
        "stop",
        False,
        False,
    )
    # the fake upstream reports 12 input tokens (4 cached) and 7 output tokens (2 reasoning)
    assert (data["tokens_prompt"], data["tokens_completion"]) == (12, 7)
    assert (data["tokens_reasoning"], data["tokens_cached"]) == (2, 4)
    assert Decimal(str(data["total_cost"])) == Decimal("0.000026")  # 12 x 0.000001 + 7 x 0.000002
    assert data["latency_ms"] >= data["time_to_first_token_ms"] >= 0
    assert data["session_id"] == "s-1" and data["is_byok"] is False and data["error"] is None
    assert data["workspace_id"] == str(org.workspace.id) and data["api_key_hash"] == org.inference_hash
    assert data["created_at"].endswith("Z") and data["completed_at"].endswith("Z")
    # the openai SDK's untyped GET reads it too
    assert sdk.get("/generation", cast_to=object, options={"params": {"id": response.id}})["data"] == data


def test_streamed_and_failed_requests(gateway_server, org, sdk):
    with sdk.responses.stream(model="echo/echo-1", input="one two") as stream:
        for _ in stream:
            pass
        streamed_id = stream.get_final_response().id
    generations(1)
    data = _lookup(gateway_server, org.inference_key, id=streamed_id).json()["data"]
    assert data["streamed"] is True and data["status"] == "completed" and data["provider"] == "echo"
    assert data["time_to_first_token_ms"] is not None

    failed = httpx.post(
        f"{gateway_server.url}/api/v1/responses",
        json={"model": "echo/echo-1", "input": "hi", "provider": {"only": ["nobody"]}},
        headers={"Authorization": f"Bearer {org.inference_key}"},
    )
    assert failed.status_code == 404
    generations(2)
    data = _lookup(gateway_server, org.inference_key, id=failed.headers["x-request-id"]).json()["data"]
    assert data["status"] == "failed" and data["model"] == "" and data["requested_model"] == "echo/echo-1"
    assert data["error"]["code"] == 404 and "provider.only" in data["error"]["message"]


def test_another_organizations_generation_is_404(gateway_server, org, other_org, sdk):
    response = sdk.responses.create(model="echo/echo-1", input="secret")
    generations(1)
    assert _lookup(gateway_server, org.inference_key, id=response.id).status_code == 200
    for key in (other_org.inference_key, other_org.management_key):
        answer = _lookup(gateway_server, key, id=response.id)
        assert answer.status_code == 404
        assert answer.json()["error"] == {"code": 404, "message": f"Generation '{response.id}' not found"}
    unknown = _lookup(gateway_server, org.inference_key, id=str(uuid.uuid4()))
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("params", "field"),
    [({}, "id"), ({"id": "nonsense"}, "id"), ({"id": ""}, "id"), ({"id": str(uuid.uuid4()), "model": "x"}, "model")],
)
def test_bad_queries_are_400_naming_the_parameter(gateway_server, org, echo_catalog, params, field):
    response = _lookup(gateway_server, org.inference_key, **params)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["metadata"]["field"] == field


def test_needs_a_key(gateway_server, echo_catalog):
    response = httpx.get(f"{gateway_server.url}/api/v1/generation", params={"id": str(uuid.uuid4())})
    assert response.status_code == 401


@pytest.mark.django_db
def test_openapi_documents_the_lookup():
    from rest_framework.test import APIClient

    document = APIClient().get("/api/v1/openapi.json").json()
    operation = document["paths"]["/api/v1/generation"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["id"]
    assert {"200", "400", "401", "404"} <= operation["responses"].keys()
    schema = document["components"]["schemas"]["GenerationRecordSchema"]
    assert {"tokens_prompt", "tokens_reasoning", "time_to_first_token_ms", "ingress_format", "cancelled"} <= set(
        schema["properties"]
    )
