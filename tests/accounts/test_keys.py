"""The /keys endpoints, key hashing and organization isolation."""

import hashlib

import pytest
from django.db import connection

from accounts.models import ApiKey

pytestmark = pytest.mark.django_db


def test_create_key_returns_raw_key_once(api, org):
    response = api.post("/api/v1/keys", {"name": "ci", "limit": 5, "limit_reset": "daily"}, format="json")
    assert response.status_code == 201
    body = response.json()
    raw = body["key"]
    assert body["data"]["hash"] == hashlib.sha256(raw.encode()).hexdigest()
    assert body["data"]["label"].endswith(raw[-4:]) and raw not in body["data"]["label"]
    assert body["data"]["limit"] == 5.0 and body["data"]["limit_remaining"] == 5.0
    assert body["data"]["workspace_id"] == str(org.workspace.id)
    assert body["data"]["created_at"].endswith("Z") and len(body["data"]["created_at"]) == 24
    again = api.get(f"/api/v1/keys/{body['data']['hash']}").json()["data"]
    assert "key" not in again
    assert org.client(raw).get("/api/v1/key").status_code == 200


def test_raw_key_is_nowhere_in_the_database(api, org):
    raw = api.post("/api/v1/keys", {"name": "secret"}, format="json").json()["key"]
    needles = [raw, raw[len("sk-gw-v1-") :], org.management_key, org.inference_key]
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                text = " ".join(str(value) for value in row)
                for needle in needles:
                    assert needle not in text, f"raw key found in table {table}"


def test_create_key_validation(api):
    assert api.post("/api/v1/keys", {}, format="json").json()["error"]["metadata"]["field"] == "name"
    response = api.post("/api/v1/keys", {"name": "x", "limit": -1}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "limit"
    response = api.post("/api/v1/keys", {"name": "x", "limit_reset": "hourly"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "limit_reset"
    response = api.post("/api/v1/keys", {"name": "x", "workspace_id": "nope"}, format="json")
    assert response.status_code == 404


def test_create_management_key_in_named_workspace(api):
    workspace = api.post("/api/v1/workspaces", {"name": "Research"}, format="json").json()["data"]
    response = api.post(
        "/api/v1/keys", {"name": "m", "is_management": True, "workspace_id": workspace["slug"]}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["data"]["is_management_key"] is True
    assert response.json()["data"]["workspace_id"] == workspace["id"]


def test_list_paginates(api):
    for i in range(3):
        api.post("/api/v1/keys", {"name": f"k{i}"}, format="json")
    body = api.get("/api/v1/keys?limit=2&offset=1").json()
    assert body["total_count"] == 5
    assert len(body["data"]) == 2


def test_patch_and_delete(api, org):
    response = api.patch(f"/api/v1/keys/{org.inference_hash}", {"disabled": True, "name": "renamed"}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["disabled"] is True and response.json()["data"]["name"] == "renamed"
    assert org.client(org.inference_key).get("/api/v1/key").status_code == 401
    response = api.delete(f"/api/v1/keys/{org.inference_hash}")
    assert response.status_code == 200 and response.json() == {"deleted": True}
    assert not ApiKey.objects.filter(hash=org.inference_hash).exists()
    assert api.get(f"/api/v1/keys/{org.inference_hash}").status_code == 404


def test_organizations_are_isolated(org, other_org):
    mine = org.client().get("/api/v1/keys").json()["data"]
    theirs = other_org.client().get("/api/v1/keys").json()["data"]
    assert {k["hash"] for k in mine} == {org.management_hash, org.inference_hash}
    assert {k["hash"] for k in theirs} == {other_org.management_hash, other_org.inference_hash}
    client = org.client()
    assert client.get(f"/api/v1/keys/{other_org.inference_hash}").status_code == 404
    assert (
        client.patch(f"/api/v1/keys/{other_org.inference_hash}", {"disabled": True}, format="json").status_code == 404
    )
    assert client.delete(f"/api/v1/keys/{other_org.inference_hash}").status_code == 404
    assert client.get(f"/api/v1/workspaces/{other_org.workspace.id}").status_code == 404
    assert client.get(f"/api/v1/workspaces/{other_org.workspace.slug}").json()["data"]["id"] == str(org.workspace.id)
