"""Strict management bodies: a member a body does not take is a 400 naming it, on every write endpoint.

The endpoints are read from the gateway's own OpenAPI document, so an endpoint added later is covered too.
"""

from __future__ import annotations

import pytest
from django.test import Client

from guardrails.models import Guardrail
from scim.models import GroupMapping, ScimGroup
from tests.byok.helpers import make_provider

UNKNOWN = "totally_unknown_field"


@pytest.fixture
def resources(org, api):
    """One record of each addressable kind, so every path resolves to something that exists."""
    make_provider("openai")
    guardrail = api.post("/api/v1/guardrails", {"name": "g"}, format="json").json()["data"]["id"]
    credential = api.post("/api/v1/byok", {"provider": "openai", "key": "sk-test-1234567890"}, format="json")
    destination = api.post(
        "/api/v1/observability/destinations",
        {"name": "d", "type": "webhook", "config": {"url": "https://example.com/hook"}},
        format="json",
    )
    group = ScimGroup.objects.create(organization=org.organization, display_name="eng")
    mapping = GroupMapping.objects.create(
        organization=org.organization, group=group, workspace=org.workspace, role="member"
    )
    return {
        "/guardrails/": guardrail,
        "/byok/": credential.json()["data"]["id"],
        "/observability/destinations/": destination.json()["data"]["id"],
        "/scim/group-mappings/": str(mapping.id),
        "/workspaces/": str(org.workspace.id),
    }


def _data_plane(path: str) -> bool:
    """Paths the ASGI data-plane routes serve (their bodies are checked by their wire format's validator and
    covered by tests/inference)."""
    from inference.asgi_routes import http_routes

    return any(route.pattern.match(path.lstrip("/")) for route in http_routes)


def _write_operations() -> list[tuple[str, str]]:
    schema = Client().get("/api/v1/openapi.json").json()
    operations = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("post", "put", "patch") and "requestBody" in operation and not _data_plane(path):
                operations.append((method, path))
    return operations


def _url(path: str, org, resources: dict) -> str:
    for prefix, identifier in resources.items():
        path = path.replace(prefix + "{id}", prefix + identifier)
    return (
        path.replace("{hash}", org.inference_hash)
        .replace("{slug}", "strict")
        .replace("{interval}", "daily")
        .replace("{version}", "1")
    )


@pytest.mark.django_db
def test_every_write_endpoint_refuses_an_unknown_member_by_name(org, api, resources):
    operations = _write_operations()
    assert len(operations) >= 20
    for method, path in operations:
        url = _url(path, org, resources)
        response = getattr(api, method)(url, {UNKNOWN: True}, format="json")
        assert response.status_code == 400, (method, path, response.content)
        error = response.json()["error"]
        assert error["metadata"]["field"] == UNKNOWN, (method, path, error)
        # "unknown field" (management serializers) or "unknown parameter" (a body in a data-plane wire format)
        assert error["message"].startswith(f"{UNKNOWN}: unknown "), (method, path, error)


@pytest.mark.django_db
def test_nothing_is_written_when_a_body_has_an_unknown_member(api):
    before = Guardrail.objects.count()
    response = api.post("/api/v1/guardrails", {"name": "valid", UNKNOWN: True}, format="json")
    assert response.status_code == 400
    assert Guardrail.objects.count() == before


@pytest.mark.django_db
def test_nested_objects_are_strict(api):
    response = api.post(
        "/api/v1/guardrails",
        {"name": "g", "content_filters": [{"pattern": "x", "action": "block", "colour": "red"}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("content_filters.0.colour: unknown field")


@pytest.mark.django_db
def test_a_read_only_field_in_a_body_is_refused(api):
    response = api.post("/api/v1/workspaces", {"name": "w", "created_at": "2026-01-01T00:00:00Z"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "created_at"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("public", "ours"),
    [
        ("enforce_zdr_openai", "enforce_zdr_vendor_a"),
        ("enforce_zdr_anthropic", "enforce_zdr_vendor_b"),
        ("enforce_zdr_google", "enforce_zdr_vendor_c"),
        ("enforce_zdr_xai", "enforce_zdr_vendor_d"),
    ],
)
def test_public_zdr_names_are_aliases_of_the_configured_vendor_fields(api, public, ours):
    created = api.post("/api/v1/guardrails", {"name": "z", public: True}, format="json")
    assert created.status_code == 201, created.content
    data = created.json()["data"]
    assert data[ours] is True
    assert [f for f in ("a", "b", "c", "d") if data[f"enforce_zdr_vendor_{f}"]] == [ours[-1]]
    updated = api.patch(f"/api/v1/guardrails/{data['id']}", {public: False}, format="json")
    assert updated.status_code == 200
    assert updated.json()["data"][ours] is False


@pytest.mark.django_db
def test_alias_and_field_with_different_values_are_refused(api):
    body = {"name": "z", "enforce_zdr_openai": True, "enforce_zdr_vendor_a": False}
    response = api.post("/api/v1/guardrails", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "enforce_zdr_openai"


@pytest.mark.django_db
def test_a_public_zdr_name_whose_vendor_is_not_configured_is_refused(api, settings):
    settings.GATEWAY_ZDR_VENDOR_D = "mistral"
    response = api.post("/api/v1/guardrails", {"name": "z", "enforce_zdr_xai": True}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["metadata"]["field"] == "enforce_zdr_xai"
    assert "x-ai" in error["message"]
    mistral = api.post("/api/v1/guardrails", {"name": "z", "enforce_zdr_vendor_d": True}, format="json")
    assert mistral.status_code == 201


@pytest.mark.django_db
def test_builtin_filter_label_is_accepted_only_when_it_is_the_server_label(api):
    ok = {"name": "g", "content_filter_builtins": [{"slug": "email", "action": "redact", "label": "[EMAIL]"}]}
    assert api.post("/api/v1/guardrails", ok, format="json").status_code == 201
    bad = {"name": "g", "content_filter_builtins": [{"slug": "email", "action": "redact", "label": "[MAIL]"}]}
    response = api.post("/api/v1/guardrails", bad, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("content_filter_builtins.0.label")


@pytest.mark.django_db
def test_preset_bodies_accept_what_the_spec_ignores_and_refuse_the_rest(api):
    responses = {"model": "openai/gpt-4o-mini", "stream": True, "messages": []}
    assert api.post("/api/v1/presets/p/responses", responses, format="json").status_code == 200
    messages = {"model": "openai/gpt-4o-mini", "max_tokens": 10, "messages": [], "stream": True, "metadata": {}}
    assert api.post("/api/v1/presets/p/messages", messages, format="json").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("effort", [{}, [], 3])
def test_chat_reasoning_effort_of_the_wrong_type_is_a_400_not_a_500(api, effort):
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": effort}
    response = api.post("/api/v1/presets/p/chat/completions", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "reasoning_effort"
