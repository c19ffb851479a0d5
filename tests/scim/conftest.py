"""Helpers of the scim tests: a SCIM client speaking application/scim+json with a management key."""

from __future__ import annotations

import json

import pytest
from django.test import Client

SCIM = "/api/v1/scim/v2"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimClient:
    def __init__(self, key: str) -> None:
        self.client = Client()
        self.key = key

    def request(self, method: str, path: str, body=None, *, key: str | None = None, raw: str | None = None):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key or self.key}"} if (key or self.key) else {}
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"content_type": "application/scim+json"} if data is not None else {}
        call = getattr(self.client, method.lower())
        url = path if path.startswith("/") and path.startswith(SCIM) else f"{SCIM}{path}"
        if data is not None:
            return call(url, data, **kwargs, **headers)
        return call(url, **headers)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def query(self, path, **params):
        """GET with query parameters encoded by the test client (filters contain spaces and quotes)."""
        return self.client.get(f"{SCIM}{path}", params, HTTP_AUTHORIZATION=f"Bearer {self.key}")

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, operations, **kw):
        return self.request("PATCH", path, {"schemas": [PATCH_SCHEMA], "Operations": operations}, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def create_user(self, user_name: str, **extra) -> dict:
        response = self.post("/Users", {"schemas": [USER_SCHEMA], "userName": user_name, **extra})
        assert response.status_code == 201, response.content
        return response.json()

    def create_group(self, name: str, members: list[str] = (), **extra) -> dict:
        body = {"schemas": [GROUP_SCHEMA], "displayName": name, "members": [{"value": m} for m in members], **extra}
        response = self.post("/Groups", body)
        assert response.status_code == 201, response.content
        return response.json()


@pytest.fixture
def scim(org) -> ScimClient:
    return ScimClient(org.management_key)


def assert_scim_error(response, status: int, scim_type: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/scim+json")
    body = response.json()
    assert body["schemas"] == [ERROR_SCHEMA]
    assert body["status"] == str(status)
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return body
