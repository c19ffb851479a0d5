"""The guardrail admin API: create, read, list, update, delete, and every validation rule."""

import uuid

import pytest

from accounts import services as account_services
from accounts.models import Organization
from guardrails.models import Guardrail

pytestmark = pytest.mark.django_db


def create(api, **body):
    body.setdefault("name", "Team policy")
    return api.post("/api/v1/guardrails", body, format="json")


def test_create_returns_201_with_every_field(api, org):
    response = create(
        api,
        description="PII stays home",
        allowed_data_regions=["europe", "global"],
        allowed_models=["openai/gpt-4o-mini"],
        allowed_providers=["openai", "anthropic"],
        ignored_models=["openai/gpt-4.1"],
        ignored_providers=["together"],
        content_filter_builtins=[
            {"slug": "email", "action": "redact"},
            {"slug": "regex-prompt-injection", "action": "block", "scan_scope": "user_only"},
        ],
        content_filters=[{"pattern": r"ACCT-\d{6}", "action": "block", "label": "[ACCOUNT]"}],
        enable_free_model_training=True,
        limit_usd=12.5,
        reset_interval="weekly",
        include_byok_in_budgets=True,
    )
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert uuid.UUID(data["id"])
    assert data["name"] == "Team policy"
    assert data["description"] == "PII stays home"
    assert data["workspace_id"] == str(org.workspace.id)
    assert data["allowed_data_regions"] == ["europe", "global"]
    assert data["allowed_models"] == ["openai/gpt-4o-mini"]
    assert data["ignored_providers"] == ["together"]
    assert data["content_filter_builtins"] == [
        {"slug": "email", "action": "redact", "label": "[EMAIL]"},
        {"slug": "regex-prompt-injection", "action": "block", "label": "[PROMPT_INJECTION]", "scan_scope": "user_only"},
    ]
    assert data["content_filters"] == [{"pattern": r"ACCT-\d{6}", "action": "block", "label": "[ACCOUNT]"}]
    assert data["enable_free_model_training"] is True
    assert data["enable_paid_model_training"] is False
    assert data["enable_free_model_publication"] is False
    assert data["limit_usd"] == 12.5
    assert data["reset_interval"] == "weekly"
    assert data["include_byok_in_budgets"] is True
    assert data["enforce_zdr"] is None
    assert data["enforce_zdr_vendor_a"] is False
    assert data["created_at"].endswith("Z")
    assert data["updated_at"] is None


def test_minimal_create_has_safe_defaults(api):
    data = create(api).json()["data"]
    assert data["allowed_data_regions"] is None
    assert data["content_filters"] is None
    assert data["limit_usd"] is None and data["reset_interval"] is None
    assert data["include_byok_in_budgets"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"description": "d" * 1001}, "description"),
        ({"limit_usd": 10}, "reset_interval"),
        ({"reset_interval": "daily"}, "limit_usd"),
        ({"limit_usd": None, "reset_interval": "daily"}, "limit_usd"),
        ({"limit_usd": -1, "reset_interval": "daily"}, "limit_usd"),
        ({"limit_usd": 5, "reset_interval": "yearly"}, "reset_interval"),
        ({"allowed_data_regions": []}, "allowed_data_regions"),
        ({"allowed_data_regions": ["mars"]}, "allowed_data_regions"),
        ({"allowed_models": []}, "allowed_models"),
        ({"allowed_providers": []}, "allowed_providers"),
        ({"ignored_models": []}, "ignored_models"),
        ({"ignored_providers": []}, "ignored_providers"),
        ({"content_filter_builtins": []}, "content_filter_builtins"),
        ({"content_filters": []}, "content_filters"),
        ({"content_filter_builtins": [{"slug": "dna", "action": "block"}]}, "content_filter_builtins"),
        ({"content_filter_builtins": [{"slug": "email", "action": "shout"}]}, "content_filter_builtins"),
        (
            {"content_filter_builtins": [{"slug": "email", "action": "block"}, {"slug": "email", "action": "flag"}]},
            "content_filter_builtins",
        ),
        (
            {"content_filter_builtins": [{"slug": "email", "action": "block", "scan_scope": "user_only"}]},
            "content_filter_builtins",
        ),
        ({"content_filters": [{"pattern": "(unclosed", "action": "block"}]}, "content_filters"),
        ({"content_filters": [{"pattern": "(?<=a)b", "action": "block"}]}, "content_filters"),
        ({"content_filters": [{"pattern": "ok", "action": "nope"}]}, "content_filters"),
        ({"workspace_id": "not-a-uuid"}, "workspace_id"),
        ({"workspace_id": str(uuid.uuid4())}, "workspace_id"),
    ],
)
def test_create_validation_is_400_naming_the_field(api, body, field):
    response = create(api, **body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == 400
    assert error["message"].startswith(field)
    assert error["metadata"]["field"].startswith(field)
    assert Guardrail.objects.count() == 0


def test_missing_name_is_400(api):
    response = api.post("/api/v1/guardrails", {}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "name"


def test_both_limit_fields_null_is_accepted(api):
    response = create(api, limit_usd=None, reset_interval=None)
    assert response.status_code == 201


def test_limit_without_interval_sent_as_null_is_a_lifetime_limit(api):
    response = create(api, limit_usd=3, reset_interval=None)
    assert response.status_code == 201
    assert response.json()["data"]["limit_usd"] == 3.0
    assert response.json()["data"]["reset_interval"] is None


def test_enforce_zdr_is_copied_into_vendor_fields_not_set(api):
    data = create(api, enforce_zdr=True, enforce_zdr_vendor_b=False).json()["data"]
    assert data["enforce_zdr"] is True
    assert data["enforce_zdr_vendor_a"] is True
    assert data["enforce_zdr_vendor_b"] is False
    assert data["enforce_zdr_vendor_c"] is True
    assert data["enforce_zdr_vendor_d"] is True
    assert data["enforce_zdr_other"] is True


def test_create_in_a_named_workspace(api, org):
    other = account_services.workspace_create(organization=org.organization, name="Research")
    data = create(api, workspace_id=str(other.id)).json()["data"]
    assert data["workspace_id"] == str(other.id)


def test_create_without_workspace_after_default_was_deleted_is_400(api, org):
    Organization.objects.filter(pk=org.organization.pk).update(default_workspace=None)
    response = create(api)
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "workspace_id"
    other = account_services.workspace_create(organization=org.organization, name="Research")
    assert create(api, workspace_id=str(other.id)).status_code == 201


def test_another_organizations_workspace_is_400(api, other_org):
    response = create(api, workspace_id=str(other_org.workspace.id))
    assert response.status_code == 400


def test_inference_key_gets_403_and_no_key_401(org):
    assert org.client(org.inference_key).get("/api/v1/guardrails").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/guardrails").status_code == 401


def test_get_list_filter_and_pagination(api, org):
    other = account_services.workspace_create(organization=org.organization, name="Research")
    ids = [create(api, name=f"g{i}").json()["data"]["id"] for i in range(3)]
    in_other = create(api, name="other", workspace_id=str(other.id)).json()["data"]["id"]
    response = api.get("/api/v1/guardrails")
    assert response.status_code == 200
    assert response.json()["total_count"] == 4
    assert api.get(f"/api/v1/guardrails/{ids[0]}").json()["data"]["name"] == "g0"
    only_other = api.get(f"/api/v1/guardrails?workspace_id={other.id}").json()
    assert [g["id"] for g in only_other["data"]] == [in_other]
    page = api.get("/api/v1/guardrails?offset=1&limit=2").json()
    assert len(page["data"]) == 2 and page["total_count"] == 4
    assert api.get("/api/v1/guardrails?limit=0").status_code == 400
    assert api.get("/api/v1/guardrails?workspace_id=nope").status_code == 400


def test_other_organization_cannot_see_or_change(api, other_org):
    guardrail_id = create(api).json()["data"]["id"]
    client = other_org.client()
    assert client.get(f"/api/v1/guardrails/{guardrail_id}").status_code == 404
    assert client.patch(f"/api/v1/guardrails/{guardrail_id}", {"name": "x"}, format="json").status_code == 404
    assert client.delete(f"/api/v1/guardrails/{guardrail_id}").status_code == 404
    assert client.get("/api/v1/guardrails").json()["total_count"] == 0


def test_unknown_id_is_404(api):
    assert api.get(f"/api/v1/guardrails/{uuid.uuid4()}").status_code == 404
    assert api.get("/api/v1/guardrails/not-a-uuid").json()["error"]["code"] == 404


def test_patch_changes_only_sent_fields_and_sets_updated_at(api):
    created = create(api, allowed_models=["openai/gpt-4o-mini"], description="keep").json()["data"]
    response = api.patch(
        f"/api/v1/guardrails/{created['id']}",
        {"name": "Renamed", "allowed_models": ["anthropic/claude-sonnet-4"], "ignored_providers": ["groq"]},
        format="json",
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["name"] == "Renamed"
    assert data["description"] == "keep"
    assert data["allowed_models"] == ["anthropic/claude-sonnet-4"]
    assert data["ignored_providers"] == ["groq"]
    assert data["updated_at"] is not None
    cleared = api.patch(f"/api/v1/guardrails/{created['id']}", {"allowed_models": None}, format="json")
    assert cleared.json()["data"]["allowed_models"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"limit_usd": 5}, "reset_interval"),
        ({"reset_interval": "monthly"}, "limit_usd"),
        ({"allowed_data_regions": []}, "allowed_data_regions"),
        ({"content_filters": [{"pattern": "[", "action": "redact"}]}, "content_filters"),
        ({"workspace_id": "00000000-0000-0000-0000-000000000000"}, "workspace_id"),
    ],
)
def test_patch_validation(api, body, field):
    guardrail_id = create(api).json()["data"]["id"]
    response = api.patch(f"/api/v1/guardrails/{guardrail_id}", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"].startswith(field)


def test_patch_limit_pair(api):
    guardrail_id = create(api).json()["data"]["id"]
    data = api.patch(
        f"/api/v1/guardrails/{guardrail_id}", {"limit_usd": "7.25", "reset_interval": "daily"}, format="json"
    ).json()["data"]
    assert data["limit_usd"] == 7.25 and data["reset_interval"] == "daily"


def test_delete(api):
    guardrail_id = create(api).json()["data"]["id"]
    response = api.delete(f"/api/v1/guardrails/{guardrail_id}")
    assert response.status_code == 200
    assert response.json() == {"deleted": True}
    assert api.get(f"/api/v1/guardrails/{guardrail_id}").status_code == 404
