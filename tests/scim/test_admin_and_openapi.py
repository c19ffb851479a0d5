"""The scim app in the Django admin and in the OpenAPI document."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.scim.test_mappings import create_mapping

pytestmark = pytest.mark.django_db


def test_admin_pages(org, api, scim):
    user = scim.create_user("kim", displayName="Kim")
    group = scim.create_group("eng", [user["id"]])
    create_mapping(api, group["id"], org.workspace, "admin")
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    for model in ("scimuser", "scimgroup", "groupmapping", "membershipgrant"):
        response = client.get(f"/admin/scim/{model}/")
        assert response.status_code == 200, model
    assert b"kim" in client.get("/admin/scim/scimuser/?q=kim").content
    assert client.get(f"/admin/scim/scimgroup/{group['id']}/change/").status_code == 200
    assert client.get(f"/admin/scim/scimuser/{user['id']}/change/").status_code == 200


def test_openapi_documents_management_endpoints_only(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/scim/group-mappings"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/scim/group-mappings/{id}"])
    keep = [p for p in paths["/api/v1/scim/group-mappings/{id}"]["delete"]["parameters"] if p["name"] == "keep_members"]
    assert keep and keep[0]["required"] is True
    assert "201" in paths["/api/v1/scim/group-mappings"]["post"]["responses"]
    assert "/api/v1/scim/groups" in paths
    assert not [p for p in paths if p.startswith("/api/v1/scim/v2")]
