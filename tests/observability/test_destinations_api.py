"""POST/GET/PATCH/DELETE /observability/destinations: every validation rule, masking, limits, scoping."""

from __future__ import annotations

import pytest

from accounts import services as account_services
from observability.models import Destination
from observability.types import TYPE_SPECS

pytestmark = pytest.mark.django_db

URL = "/api/v1/observability/destinations"
LANGFUSE = {"publicKey": "pk-lf-1234567890", "secretKey": "sk-lf-abcdefghijklmnop", "baseUrl": "https://lf.example.com"}


def create(api, **body):
    body.setdefault("name", "Traces")
    body.setdefault("type", "langfuse")
    body.setdefault("config", dict(LANGFUSE))
    return api.post(URL, body, format="json")


def assert_400(response, field):
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == 400
    assert error["metadata"]["field"] == field, error
    assert error["message"].startswith(f"{field}: ")


def test_create_returns_201_with_defaults_and_masked_secrets(api, org):
    response = create(api)
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["name"] == "Traces" and data["type"] == "langfuse"
    assert data["config"] == {
        "publicKey": "pk-lf-1234567890",
        "secretKey": "sk-l...mnop",
        "baseUrl": LANGFUSE["baseUrl"],
    }
    assert data["enabled"] is True
    assert data["api_key_hashes"] is None and data["filter_rules"] is None
    assert data["privacy_mode"] is False and data["sampling_rate"] == 1
    assert not data["broadcast_generation_cost"] and not data["broadcast_generation_identity"]
    assert data["broadcast_generation_request_context"] is False
    assert data["workspace_id"] == str(org.workspace.id)
    assert data["created_at"].endswith("Z") and data["updated_at"].endswith("Z")


def test_secrets_are_encrypted_at_rest(api):
    data = create(api).json()["data"]
    row = Destination.objects.get(pk=data["id"])
    assert "sk-lf-abcdefghijklmnop" not in row.secret_config and "secretKey" not in row.config
    assert row.full_config()["secretKey"] == "sk-lf-abcdefghijklmnop"


def test_every_type_is_accepted_with_its_required_keys(api):
    for type_, spec in TYPE_SPECS.items():
        config = {key: "https://h.example.com/x" for key in spec.required}
        if type_ == "sentry":
            config["dsn"] = "https://abc123@o1.ingest.sentry.io/42"
        if type_ == "snowflake":
            config["account"] = "myorg-account1"
        response = create(api, type=type_, config=config)
        assert response.status_code == 201, (type_, response.content)
    assert api.get(URL, {"limit": 100}).json()["total_count"] == len(TYPE_SPECS) == 17


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "nope"}, "type"),
        ({"type": None}, "type"),
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"config": "x"}, "config"),
        ({"config": {"publicKey": "pk"}}, "config.secretKey"),
        ({"config": {**LANGFUSE, "extra": "1"}}, "config.extra"),
        ({"config": {**LANGFUSE, "baseUrl": "ftp://x"}}, "config.baseUrl"),
        ({"config": {**LANGFUSE, "secretKey": 5}}, "config.secretKey"),
        ({"config": {**LANGFUSE, "headers": {"X-A": 1}}}, "config.headers.X-A"),
        ({"config": {**LANGFUSE, "headers": {"bad name": "v"}}}, "config.headers"),
        ({"config": {**LANGFUSE, "headers": ["x"]}}, "config.headers"),
        ({"type": "webhook", "config": {"url": "not a url"}}, "config.url"),
        ({"type": "webhook", "config": {"url": "https://x.example.com", "method": "GET"}}, "config.method"),
        ({"type": "newrelic", "config": {"licenseKey": "k", "region": "ap"}}, "config.region"),
        ({"type": "otel-collector", "config": {}}, "config.endpoint"),
        ({"type": "snowflake", "config": {"account": "evil.com/x", "token": "t"}}, "config.account"),
        ({"sampling_rate": 0}, "sampling_rate"),
        ({"sampling_rate": 0.00009}, "sampling_rate"),
        ({"sampling_rate": 1.01}, "sampling_rate"),
        ({"sampling_rate": "x"}, "sampling_rate"),
        ({"api_key_hashes": []}, "api_key_hashes"),
        ({"api_key_hashes": ["XYZ"]}, "api_key_hashes"),
        ({"api_key_hashes": ["a" * 64]}, "api_key_hashes"),
        ({"enabled": "maybe"}, "enabled"),
        ({"privacy_mode": "maybe"}, "privacy_mode"),
        ({"workspace_id": "no-such-workspace"}, "workspace_id"),
        ({"filter_rules": "x"}, "filter_rules"),
        ({"filter_rules": {"groups": [{"rules": []}]}}, "filter_rules.groups[0].rules"),
        (
            {"filter_rules": {"groups": [{"logic": "xor", "rules": [{"field": "model", "operator": "exists"}]}]}},
            "filter_rules.groups[0].logic",
        ),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "color", "operator": "exists"}]}]}},
            "filter_rules.groups[0].rules[0].field",
        ),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "model", "operator": "like", "value": "x"}]}]}},
            "filter_rules.groups[0].rules[0].operator",
        ),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "model", "operator": "regex", "value": "("}]}]}},
            "filter_rules.groups[0].rules[0].value",
        ),
        (  # look-around: not RE2 (linear-time matching has none)
            {"filter_rules": {"groups": [{"rules": [{"field": "model", "operator": "regex", "value": "a(?=b)"}]}]}},
            "filter_rules.groups[0].rules[0].value",
        ),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "model", "operator": "equals"}]}]}},
            "filter_rules.groups[0].rules[0].value",
        ),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "total_cost", "operator": "gt", "value": "abc"}]}]}},
            "filter_rules.groups[0].rules[0].value",
        ),
        ({"filter_rules": {"enabled": "yes", "groups": []}}, "filter_rules.enabled"),
    ],
)
def test_invalid_create_bodies_get_400_naming_the_field(api, body, field):
    assert_400(create(api, **body), field)
    assert Destination.objects.count() == 0


def test_required_members(api):
    assert_400(api.post(URL, {"type": "langfuse", "config": LANGFUSE}, format="json"), "name")
    assert_400(api.post(URL, {"name": "x", "config": LANGFUSE}, format="json"), "type")
    assert_400(api.post(URL, {"name": "x", "type": "langfuse"}, format="json"), "config")


def test_key_hashes_of_another_organization_are_unknown(api, other_org):
    assert_400(create(api, api_key_hashes=[other_org.inference_hash]), "api_key_hashes")


def test_known_key_hashes_and_valid_filter_rules_are_stored(api, org):
    rules = {"groups": [{"rules": [{"field": "model", "operator": "starts_with", "value": "openai/"}]}]}
    data = create(api, api_key_hashes=[org.inference_hash], filter_rules=rules, sampling_rate=0.0001).json()["data"]
    assert data["api_key_hashes"] == [org.inference_hash]
    assert data["filter_rules"] == {"enabled": True, "groups": [{"logic": "and", "rules": rules["groups"][0]["rules"]}]}
    assert data["sampling_rate"] == 0.0001


def test_workspace_id_defaults_and_can_be_given(api, org):
    other = account_services.workspace_create(organization=org.organization, name="Second", slug="second")
    data = create(api, workspace_id=str(other.id)).json()["data"]
    assert data["workspace_id"] == str(other.id)
    listed = api.get(URL, {"workspace_id": "second"}).json()
    assert listed["total_count"] == 1 and listed["data"][0]["id"] == data["id"]


def test_no_default_workspace_without_workspace_id_is_400(api, org):
    org.organization.default_workspace = None
    org.organization.save()
    assert_400(create(api), "workspace_id")


def test_at_most_five_destinations_per_type_per_workspace(api, org):
    for index in range(5):
        assert create(api, name=f"d{index}").status_code == 201
    response = create(api, name="sixth")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == 409
    assert create(api, type="webhook", config={"url": "https://hooks.example.com"}).status_code == 201
    other = account_services.workspace_create(organization=org.organization, name="Other", slug="other")
    assert create(api, workspace_id=str(other.id)).status_code == 201
    first = api.get(URL).json()["data"][0]["id"]
    assert api.delete(f"{URL}/{first}").json() == {"deleted": True}
    assert create(api, name="after delete").status_code == 201


def test_list_get_and_delete_are_soft_and_scoped(api, org, other_org):
    first = create(api).json()["data"]
    create(api, name="Second")
    listed = api.get(URL, {"limit": 1, "offset": 1}).json()
    assert listed["total_count"] == 2 and listed["data"][0]["name"] == "Second"
    assert api.get(f"{URL}/{first['id']}").json()["data"]["config"]["secretKey"] == "sk-l...mnop"
    assert other_org.client().get(f"{URL}/{first['id']}").status_code == 404
    assert other_org.client().patch(f"{URL}/{first['id']}", {"name": "x"}, format="json").status_code == 404
    assert other_org.client().delete(f"{URL}/{first['id']}").status_code == 404
    assert other_org.client().get(URL).json()["total_count"] == 0
    assert api.delete(f"{URL}/{first['id']}").status_code == 200
    assert api.get(f"{URL}/{first['id']}").status_code == 404
    assert api.get(URL).json()["total_count"] == 1
    assert Destination.objects.filter(pk=first["id"], deleted_at__isnull=False).exists()
    assert api.get(f"{URL}/not-a-uuid").status_code == 404


def test_inference_key_gets_403_and_no_key_401(org):
    assert org.client(org.inference_key).get(URL).status_code == 403
    assert org.client(org.inference_key).post(URL, {}, format="json").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get(URL).status_code == 401


def test_patch_changes_only_present_fields(api, org):
    created = create(api, api_key_hashes=[org.inference_hash], privacy_mode=True).json()["data"]
    url = f"{URL}/{created['id']}"
    data = api.patch(url, {"name": "Renamed", "sampling_rate": 0.5}, format="json").json()["data"]
    assert data["name"] == "Renamed" and data["sampling_rate"] == 0.5
    assert data["privacy_mode"] is True and data["api_key_hashes"] == [org.inference_hash]
    assert data["config"] == created["config"]
    data = api.patch(url, {"enabled": False, "broadcast_generation_cost": True}, format="json").json()["data"]
    assert data["enabled"] is False and data["broadcast_generation_cost"] is True and data["name"] == "Renamed"


def test_patch_null_clears_key_hashes_and_filter_rules(api, org):
    rules = {"groups": [{"rules": [{"field": "model", "operator": "exists"}]}]}
    created = create(api, api_key_hashes=[org.inference_hash], filter_rules=rules).json()["data"]
    url = f"{URL}/{created['id']}"
    data = api.patch(url, {"name": "kept"}, format="json").json()["data"]
    assert data["api_key_hashes"] == [org.inference_hash] and data["filter_rules"]["groups"]
    data = api.patch(url, {"api_key_hashes": None, "filter_rules": None}, format="json").json()["data"]
    assert data["api_key_hashes"] is None and data["filter_rules"] is None


def test_patch_masked_secret_keeps_the_stored_value(api):
    created = create(api, config={**LANGFUSE, "headers": {"X-Team": "team-secret-value"}}).json()["data"]
    assert created["config"]["headers"] == {"X-Team": "team...alue"}
    url = f"{URL}/{created['id']}"
    response = api.patch(url, {"config": created["config"]}, format="json")
    assert response.status_code == 200, response.content
    row = Destination.objects.get(pk=created["id"])
    assert row.full_config() == {**LANGFUSE, "headers": {"X-Team": "team-secret-value"}}
    api.patch(url, {"config": {"secretKey": "sk-lf-new-secret-0000"}}, format="json")
    row.refresh_from_db()
    assert row.full_config()["secretKey"] == "sk-lf-new-secret-0000"
    assert row.full_config()["publicKey"] == LANGFUSE["publicKey"]
    assert row.full_config()["headers"] == {"X-Team": "team-secret-value"}
    data = api.patch(url, {"config": {"baseUrl": None}}, format="json").json()["data"]
    assert "baseUrl" not in data["config"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "webhook"}, "type"),
        ({"workspace_id": "x"}, "workspace_id"),
        ({"sampling_rate": 0}, "sampling_rate"),
        ({"sampling_rate": 2}, "sampling_rate"),
        ({"api_key_hashes": []}, "api_key_hashes"),
        ({"config": {"secretKey": None}}, "config.secretKey"),
        ({"config": {"baseUrl": "nope"}}, "config.baseUrl"),
        ({"config": {"unknown": "x"}}, "config.unknown"),
        ({"config": None}, "config"),
        ({"name": ""}, "name"),
        (
            {"filter_rules": {"groups": [{"rules": [{"field": "input", "operator": "regex", "value": "[a"}]}]}},
            "filter_rules.groups[0].rules[0].value",
        ),
    ],
)
def test_invalid_patch_bodies_get_400_and_change_nothing(api, body, field):
    created = create(api).json()["data"]
    assert_400(api.patch(f"{URL}/{created['id']}", body, format="json"), field)
    assert api.get(f"{URL}/{created['id']}").json()["data"] == created


def test_patch_of_unknown_destination_is_404(api):
    assert api.patch(f"{URL}/00000000-0000-0000-0000-000000000000", {"name": "x"}, format="json").status_code == 404


def test_destination_admin_pages(org, api):
    from django.test import Client

    create(api)
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    for model in ("destination", "outboxentry"):
        assert client.get(f"/admin/observability/{model}/").status_code == 200
    destination = Destination.objects.get()
    page = client.get(f"/admin/observability/destination/{destination.pk}/change/").content.decode()
    assert "sk-l...mnop" in page and "sk-lf-abcdefghijklmnop" not in page


def test_encryption_key_rotation_reencrypts_destination_secrets(api, settings):
    from io import StringIO

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [old]
    destination_id = create(api).json()["data"]["id"]
    before = Destination.objects.get(pk=destination_id).secret_config
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new, old]
    out = StringIO()
    call_command("rotate_byok_encryption", stdout=out)
    assert "Re-encrypted 1 destination secret config(s)" in out.getvalue()
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new]  # the old key can go now
    destination = Destination.objects.get(pk=destination_id)
    assert destination.secret_config != before
    assert destination.full_config()["secretKey"] == LANGFUSE["secretKey"]
