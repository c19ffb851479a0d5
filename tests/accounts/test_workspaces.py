"""The /workspaces endpoints and workspace members."""

import uuid

import pytest

from accounts import services
from accounts.models import WorkspaceMember, default_guardrail_id_for

pytestmark = pytest.mark.django_db


def test_workspace_crud(api):
    response = api.post("/api/v1/workspaces", {"name": "Data Science", "description": "models"}, format="json")
    assert response.status_code == 201
    workspace = response.json()["data"]
    assert workspace["slug"] == "data-science"
    assert workspace["default_guardrail_id"] == str(default_guardrail_id_for(uuid.UUID(workspace["id"])))
    assert api.get(f"/api/v1/workspaces/{workspace['slug']}").json()["data"]["id"] == workspace["id"]
    response = api.patch(f"/api/v1/workspaces/{workspace['id']}", {"name": "DS", "slug": "ds"}, format="json")
    assert response.status_code == 200 and response.json()["data"]["slug"] == "ds"
    assert api.get("/api/v1/workspaces").json()["total_count"] == 2
    assert api.delete("/api/v1/workspaces/ds").json() == {"deleted": True}
    assert api.get("/api/v1/workspaces/ds").status_code == 404


def test_duplicate_slug_is_409(api):
    api.post("/api/v1/workspaces", {"name": "A", "slug": "same"}, format="json")
    response = api.post("/api/v1/workspaces", {"name": "B", "slug": "same"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == 409


def test_invalid_slug_is_400(api):
    response = api.post("/api/v1/workspaces", {"name": "A", "slug": "not a slug"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "slug"


def test_default_workspace_cannot_be_deleted(api, org):
    response = api.delete(f"/api/v1/workspaces/{org.workspace.id}")
    assert response.status_code == 400
    assert "default workspace" in response.json()["error"]["message"]


def test_members_add_list_remove(api, org, other_org):
    user = services.user_create(organization=org.organization, username="alice")
    stranger = other_org.admin
    url = f"/api/v1/workspaces/{org.workspace.slug}/members"
    response = api.post(f"{url}/add", {"user_ids": [str(user.id)], "role": "admin"}, format="json")
    body = response.json()
    assert (body["assigned_count"], body["added_count"]) == (1, 1)
    assert [(m["user_id"], m["role"]) for m in body["data"]] == [(str(user.id), "admin")]
    members = api.get(url).json()
    assert members["total_count"] == 1 and members["data"][0]["role"] == "admin"
    response = api.post(f"{url}/add", {"user_ids": [str(stranger.id)]}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "user_ids"
    response = api.post(f"{url}/add", {"user_ids": ["not-a-uuid"]}, format="json")
    assert response.status_code == 400
    removed = api.post(f"{url}/remove", {"user_ids": [str(user.id)]}, format="json").json()
    assert removed == {"unassigned_count": 1, "removed_count": 1}
    assert not WorkspaceMember.objects.filter(user=user).exists()
    assert api.post(f"{url}/add", {"user_ids": []}, format="json").status_code == 400
