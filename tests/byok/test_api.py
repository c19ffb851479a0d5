"""POST/GET/PATCH/DELETE /byok: shapes, every validation rule, organization scoping."""

from __future__ import annotations

import re

import pytest

from byok.models import ProviderCredential
from tests.byok.helpers import RAW_KEY, create_credential, make_provider

pytestmark = pytest.mark.django_db

FIELDS = {
    "id",
    "name",
    "provider",
    "label",
    "disabled",
    "is_fallback",
    "sort_order",
    "declared_zdr",
    "declared_region",
    "is_required",
    "is_byok_only",
    "allowed_api_key_hashes",
    "allowed_models",
    "allowed_user_ids",
    "workspace_id",
    "created_at",
}


@pytest.fixture(autouse=True)
def providers(db):
    make_provider("openai")
    make_provider("anthropic")


def assert_400(response, field):
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["error"]["code"] == 400
    assert body["error"]["message"].startswith(f"{field}"), body
    assert body["error"]["metadata"]["field"].startswith(field)


def test_create_returns_201_with_the_record_and_never_the_key(api, org):
    response = api.post(
        "/api/v1/byok",
        {"provider": "openai", "key": RAW_KEY, "name": "prod key", "allowed_models": ["openai/gpt-4o-mini"]},
        format="json",
    )
    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == FIELDS
    assert data["provider"] == "openai"
    assert data["name"] == "prod key"
    assert data["label"] == "sk-...AbCd"
    assert data["disabled"] is False and data["is_fallback"] is False
    assert data["allowed_api_key_hashes"] is None and data["allowed_user_ids"] is None
    assert data["allowed_models"] == ["openai/gpt-4o-mini"]
    assert data["workspace_id"] == str(org.workspace.id)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["created_at"])
    assert RAW_KEY not in response.content.decode()
    stored = ProviderCredential.objects.get(pk=data["id"])
    assert RAW_KEY not in stored.key_ciphertext and stored.key_ciphertext


def test_workspace_id_null_is_global_and_slug_or_uuid_names_a_workspace(api, org):
    assert create_credential(api, workspace_id=None)["workspace_id"] is None
    assert create_credential(api, workspace_id="default")["workspace_id"] == str(org.workspace.id)
    assert create_credential(api, workspace_id=str(org.workspace.id))["workspace_id"] == str(org.workspace.id)


def test_workspace_of_another_organization_is_400(api, other_org):
    response = api.post(
        "/api/v1/byok", {"provider": "openai", "key": "k", "workspace_id": str(other_org.workspace.id)}, format="json"
    )
    assert_400(response, "workspace_id")


def test_sort_order_defaults_to_after_the_existing_keys_of_the_provider(api):
    assert create_credential(api)["sort_order"] == 0
    assert create_credential(api)["sort_order"] == 1
    assert create_credential(api, provider="anthropic")["sort_order"] == 0
    assert create_credential(api, sort_order=7)["sort_order"] == 7


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": "k"}, "provider"),
        ({"provider": "openai"}, "key"),
        ({"provider": "openai", "key": ""}, "key"),
        ({"provider": "no-such-provider", "key": "k"}, "provider"),
        ({"provider": "openai", "key": "k", "name": "n" * 256}, "name"),
        ({"provider": "openai", "key": "k", "allowed_api_key_hashes": []}, "allowed_api_key_hashes"),
        ({"provider": "openai", "key": "k", "allowed_api_key_hashes": ["ABC"]}, "allowed_api_key_hashes"),
        ({"provider": "openai", "key": "k", "allowed_api_key_hashes": ["A" * 64]}, "allowed_api_key_hashes"),
        ({"provider": "openai", "key": "k", "allowed_api_key_hashes": ["a" * 64]}, "allowed_api_key_hashes"),
        ({"provider": "openai", "key": "k", "allowed_api_key_hashes": "a" * 64}, "allowed_api_key_hashes"),
        ({"provider": "openai", "key": "k", "allowed_models": [f"m/{i}" for i in range(101)]}, "allowed_models"),
        ({"provider": "openai", "key": "k", "allowed_user_ids": [str(i) for i in range(101)]}, "allowed_user_ids"),
        ({"provider": "openai", "key": "k", "disabled": "maybe"}, "disabled"),
        ({"provider": "openai", "key": "k", "sort_order": -1}, "sort_order"),
    ],
)
def test_create_validation_names_the_field(api, body, field):
    response = api.post("/api/v1/byok", body, format="json")
    assert_400(response, field)
    assert ProviderCredential.objects.count() == 0


def test_allowed_api_key_hashes_of_the_organization_are_accepted(api, org):
    data = create_credential(api, allowed_api_key_hashes=[org.inference_hash, org.management_hash])
    assert data["allowed_api_key_hashes"] == [org.inference_hash, org.management_hash]


def test_hashes_of_another_organization_are_400(api, org, other_org):
    response = api.post(
        "/api/v1/byok",
        {"provider": "openai", "key": "k", "allowed_api_key_hashes": [org.inference_hash, other_org.inference_hash]},
        format="json",
    )
    assert_400(response, "allowed_api_key_hashes")
    assert other_org.inference_hash in response.json()["error"]["message"]


def test_limits_of_100_elements_are_accepted(api, org):
    models = [f"vendor/model-{i}" for i in range(100)]
    users = [f"user-{i}" for i in range(100)]
    data = create_credential(api, allowed_models=models, allowed_user_ids=users, name="n" * 255)
    assert data["allowed_models"] == models and data["allowed_user_ids"] == users and len(data["name"]) == 255


def test_list_filters_by_workspace_and_provider_and_paginates(api, org):
    from accounts.services import workspace_create

    other_ws = workspace_create(organization=org.organization, name="Team B")
    a = create_credential(api)
    b = create_credential(api, provider="anthropic")
    c = create_credential(api, workspace_id=str(other_ws.id))
    body = api.get("/api/v1/byok").json()
    assert body["total_count"] == 3 and {d["id"] for d in body["data"]} == {a["id"], b["id"], c["id"]}
    assert [d["id"] for d in api.get("/api/v1/byok?provider=anthropic").json()["data"]] == [b["id"]]
    by_ws = api.get(f"/api/v1/byok?workspace_id={other_ws.id}").json()
    assert by_ws["total_count"] == 1 and by_ws["data"][0]["id"] == c["id"]
    assert api.get("/api/v1/byok?workspace_id=team-b").json()["data"][0]["id"] == c["id"]
    page = api.get("/api/v1/byok?offset=1&limit=1").json()
    assert page["total_count"] == 3 and len(page["data"]) == 1
    assert api.get("/api/v1/byok?limit=0").status_code == 400
    assert RAW_KEY not in api.get("/api/v1/byok").content.decode()


def test_get_one_and_other_organization_is_404(api, other_org):
    data = create_credential(api)
    response = api.get(f"/api/v1/byok/{data['id']}")
    assert response.status_code == 200 and response.json() == {"data": data}
    for client in (other_org.client(),):
        assert client.get(f"/api/v1/byok/{data['id']}").status_code == 404
        assert client.patch(f"/api/v1/byok/{data['id']}", {"name": "x"}, format="json").status_code == 404
        assert client.delete(f"/api/v1/byok/{data['id']}").status_code == 404
    assert other_org.client().get("/api/v1/byok").json()["total_count"] == 0
    assert api.get("/api/v1/byok/not-a-uuid").status_code == 404
    assert api.get("/api/v1/byok/00000000-0000-0000-0000-000000000000").json()["error"]["code"] == 404


def test_management_key_is_required(org, client):
    assert org.client(org.inference_key).get("/api/v1/byok").status_code == 403
    assert org.client(org.inference_key).post("/api/v1/byok", {"provider": "openai", "key": "k"}).status_code == 403
    assert client.get("/api/v1/byok").status_code == 401


def test_patch_changes_only_present_fields(api, org):
    data = create_credential(
        api, name="first", allowed_models=["openai/gpt-4o-mini"], allowed_api_key_hashes=[org.inference_hash]
    )
    response = api.patch(f"/api/v1/byok/{data['id']}", {"disabled": True, "is_fallback": True}, format="json")
    assert response.status_code == 200
    patched = response.json()["data"]
    assert patched["disabled"] is True and patched["is_fallback"] is True
    assert patched["name"] == "first" and patched["allowed_models"] == ["openai/gpt-4o-mini"]
    assert patched["label"] == data["label"] and patched["allowed_api_key_hashes"] == [org.inference_hash]


def test_patch_null_clears_restrictions(api, org):
    data = create_credential(
        api, allowed_models=["a/b"], allowed_user_ids=["u1"], allowed_api_key_hashes=[org.inference_hash]
    )
    response = api.patch(
        f"/api/v1/byok/{data['id']}",
        {"allowed_models": None, "allowed_user_ids": None, "allowed_api_key_hashes": None},
        format="json",
    )
    patched = response.json()["data"]
    assert patched["allowed_models"] is None and patched["allowed_user_ids"] is None
    assert patched["allowed_api_key_hashes"] is None
    stored = ProviderCredential.objects.get(pk=data["id"])
    assert stored.allowed_models is None and stored.allowed_api_key_hashes is None


def test_patch_key_rotates_in_place_and_regenerates_the_label(api):
    data = create_credential(api)
    before = ProviderCredential.objects.get(pk=data["id"]).key_ciphertext
    new_key = "sk-new-Yt5rE3wQ1aZ9xC7vB5nM3lK1jH9gF7dWxYz"
    response = api.patch(f"/api/v1/byok/{data['id']}", {"key": new_key}, format="json")
    assert response.status_code == 200
    patched = response.json()["data"]
    assert patched["id"] == data["id"] and patched["label"] == "sk-...WxYz"
    assert new_key not in response.content.decode()
    stored = ProviderCredential.objects.get(pk=data["id"])
    assert stored.key_ciphertext != before
    from gateway_project.encryption import decrypt_secret

    assert decrypt_secret(stored.key_ciphertext) == new_key
    assert ProviderCredential.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": ""}, "key"),
        ({"name": "n" * 256}, "name"),
        ({"allowed_api_key_hashes": []}, "allowed_api_key_hashes"),
        ({"allowed_api_key_hashes": ["g" * 64]}, "allowed_api_key_hashes"),
        ({"allowed_api_key_hashes": ["b" * 64]}, "allowed_api_key_hashes"),
        ({"allowed_api_key_hashes": [f"{i:064x}" for i in range(101)]}, "allowed_api_key_hashes"),
        ({"allowed_models": ["m"] * 50 + [f"m{i}" for i in range(51)]}, "allowed_models"),
        ({"allowed_user_ids": [f"u{i}" for i in range(101)]}, "allowed_user_ids"),
        ({"is_fallback": None}, "is_fallback"),
    ],
)
def test_patch_validation_names_the_field_and_changes_nothing(api, body, field):
    data = create_credential(api, name="kept")
    response = api.patch(f"/api/v1/byok/{data['id']}", body, format="json")
    assert_400(response, field)
    assert api.get(f"/api/v1/byok/{data['id']}").json()["data"] == data


def test_delete_wipes_the_key_material(api):
    data = create_credential(api)
    response = api.delete(f"/api/v1/byok/{data['id']}")
    assert response.status_code == 200 and response.json() == {"deleted": True}
    assert not ProviderCredential.objects.filter(pk=data["id"]).exists()
    assert api.get(f"/api/v1/byok/{data['id']}").status_code == 404
    assert api.delete(f"/api/v1/byok/{data['id']}").status_code == 404


def test_put_is_not_allowed(api):
    data = create_credential(api)
    response = api.put(f"/api/v1/byok/{data['id']}", {"name": "x"}, format="json")
    assert response.status_code == 405 and response.json()["error"]["code"] == 405
