"""`requests_per_minute` / `tokens_per_minute` on keys and workspaces: written, shown, validated, in the admin."""

import pytest

from accounts.models import ApiKey, Workspace

pytestmark = pytest.mark.django_db


def test_key_create_patch_and_show(api, org):
    response = api.post(
        "/api/v1/keys", {"name": "rl", "requests_per_minute": 60, "tokens_per_minute": 10000}, format="json"
    )
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["requests_per_minute"] == 60 and data["tokens_per_minute"] == 10000
    raw = response.json()["key"]
    shown = org.client(raw).get("/api/v1/key").json()["data"]
    assert shown["requests_per_minute"] == 60 and shown["tokens_per_minute"] == 10000
    listed = {k["hash"]: k for k in api.get("/api/v1/keys").json()["data"]}
    assert listed[data["hash"]]["requests_per_minute"] == 60

    patched = api.patch(f"/api/v1/keys/{data['hash']}", {"requests_per_minute": None}, format="json").json()["data"]
    assert patched["requests_per_minute"] is None and patched["tokens_per_minute"] == 10000
    key = ApiKey.objects.get(hash=data["hash"])
    assert key.requests_per_minute is None and key.tokens_per_minute == 10000


def test_key_without_limits_shows_null(org):
    shown = org.client(org.inference_key).get("/api/v1/key").json()["data"]
    assert shown["requests_per_minute"] is None and shown["tokens_per_minute"] is None


@pytest.mark.parametrize("value", [0, -5, 1.5, "many", 2**31])
@pytest.mark.parametrize("field", ["requests_per_minute", "tokens_per_minute"])
def test_key_invalid_values_are_400_naming_the_field(api, org, field, value):
    response = api.post("/api/v1/keys", {"name": "x", field: value}, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["metadata"]["field"] == field
    response = api.patch(f"/api/v1/keys/{org.inference_hash}", {field: value}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == field
    assert getattr(ApiKey.objects.get(hash=org.inference_hash), field) is None


def test_workspace_create_patch_and_show(api):
    body = {"name": "Limited", "requests_per_minute": 5, "tokens_per_minute": 700}
    created = api.post("/api/v1/workspaces", body, format="json")
    assert created.status_code == 201
    data = created.json()["data"]
    assert data["requests_per_minute"] == 5 and data["tokens_per_minute"] == 700
    patched = api.patch(f"/api/v1/workspaces/{data['slug']}", {"tokens_per_minute": None}, format="json")
    assert patched.json()["data"]["tokens_per_minute"] is None and patched.json()["data"]["requests_per_minute"] == 5
    shown = api.get(f"/api/v1/workspaces/{data['id']}").json()["data"]
    assert shown["requests_per_minute"] == 5 and shown["tokens_per_minute"] is None
    response = api.patch(f"/api/v1/workspaces/{data['id']}", {"requests_per_minute": 0}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "requests_per_minute"
    assert Workspace.objects.get(pk=data["id"]).requests_per_minute == 5


def test_admin_edits_rate_limits(org, client):
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    key = ApiKey.objects.get(hash=org.inference_hash)
    page = client.get(f"/admin/accounts/apikey/{key.pk}/change/")
    assert page.status_code == 200 and b"requests_per_minute" in page.content and b"tokens_per_minute" in page.content
    page = client.get(f"/admin/accounts/workspace/{org.workspace.pk}/change/")
    assert page.status_code == 200 and b"tokens_per_minute" in page.content


def test_admin_refuses_zero(org, client):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    url = f"/admin/accounts/workspace/{org.workspace.pk}/change/"
    form = {"organization": org.workspace.organization_id, "name": "W", "slug": "default", "requests_per_minute": 0}
    form.update({"memberships-TOTAL_FORMS": 0, "memberships-INITIAL_FORMS": 0})
    page = client.post(url, form)
    assert page.status_code == 200 and b"greater than or equal to 1" in page.content
    assert Workspace.objects.get(pk=org.workspace.pk).requests_per_minute is None
