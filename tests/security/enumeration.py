"""Every operation of the management API, enumerated from the served OpenAPI document, with the resources
of one organization to aim them at (used by the generated isolation and permission tests)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rest_framework.test import APIClient

from inference.embeddings.openapi import PATH as EMBEDDINGS_PATH
from inference.openapi import PATH as RESPONSES_PATH
from inference.openapi_wire import CHAT_PATH, MESSAGES_PATH
from tests.conftest import OrgFixture
from tests.scim.conftest import ScimClient

METHODS = ("get", "post", "put", "patch", "delete")
# Operations any key of the organization may call (everything else needs a management key).
ANY_KEY_OPERATIONS = {
    ("GET", "/api/v1/key"),
    ("GET", "/api/v1/datasets/rankings-daily"),
    ("GET", "/api/v1/models"),
    ("GET", "/api/v1/models/{vendor}/{name}"),
    ("GET", "/api/v1/models/{vendor}/{name}/endpoints"),
    ("GET", "/api/v1/generation"),
    ("GET", "/api/v1/credits"),
    ("GET", "/api/v1/models/count"),
    ("GET", "/api/v1/model/{author}/{slug}"),
    ("GET", "/api/v1/endpoints/zdr"),
    ("GET", "/api/v1/providers"),
    ("GET", "/api/v1/embeddings/models"),
}
# Operations on the shared catalog, which belongs to no organization (out of the cross-organization tests).
CATALOG_OPERATIONS = {
    ("GET", "/api/v1/models/{vendor}/{name}"),
    ("GET", "/api/v1/models/{vendor}/{name}/endpoints"),
    ("GET", "/api/v1/model/{author}/{slug}"),
}
# Reads of one resource named by a query parameter (their cross-organization 404 is tested on their own:
# tests/inference/test_generation_lookup.py).
QUERY_LOOKUP_OPERATIONS = {("GET", "/api/v1/generation")}
PRESET_SLUG = "iso-preset"
# The data plane's routes are served by the ASGI application, not by Django (tested through the loopback server).
DATA_PLANE_PATHS = (
    RESPONSES_PATH,
    CHAT_PATH,
    MESSAGES_PATH,
    EMBEDDINGS_PATH,
    f"{RESPONSES_PATH}/input_tokens",
    f"{MESSAGES_PATH}/count_tokens",
)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str

    @property
    def params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def management_operations() -> list[Operation]:
    """Every operation of /api/v1/openapi.json except the data plane's (/responses, /chat/completions, /messages,
    /embeddings and the token counts)."""
    schema = APIClient().get("/api/v1/openapi.json").json()
    return [
        Operation(method.upper(), path)
        for path, item in sorted(schema["paths"].items())
        for method in METHODS
        if method in item and path not in DATA_PLANE_PATHS
    ]


@dataclass
class OrgResources:
    """One resource of every type in an organization, created through the API with its management key."""

    org: OrgFixture
    ids: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, org: OrgFixture) -> OrgResources:
        from tests.byok.helpers import make_provider

        make_provider("openai")
        api = org.client()
        ids = {"workspace": str(org.workspace.id), "key": org.inference_hash, "preset": PRESET_SLUG}

        def created(response, status=201) -> dict:
            assert response.status_code == status, response.content
            return response.json()["data"]

        ids["guardrail"] = created(api.post("/api/v1/guardrails", {"name": "iso"}, format="json"))["id"]
        ids["byok"] = created(
            api.post("/api/v1/byok", {"provider": "openai", "key": "sk-iso-4p9Qw2Lm7Zx1"}, format="json")
        )["id"]
        destination = {"name": "iso", "type": "webhook", "config": {"url": "https://8.8.8.8/hook"}}
        ids["destination"] = created(api.post("/api/v1/observability/destinations", destination, format="json"))["id"]
        created(api.post(f"/api/v1/presets/{PRESET_SLUG}/responses", {"model": "echo/echo-1"}, format="json"), 200)
        ids["scim_group"] = ScimClient(org.management_key).create_group("iso-group")["id"]
        mapping = {"scim_group_id": ids["scim_group"], "workspace_id": ids["workspace"], "role": "member"}
        ids["group_mapping"] = created(api.post("/api/v1/scim/group-mappings", mapping, format="json"))["id"]
        created(api.put(f"/api/v1/workspaces/{ids['workspace']}/budgets/daily", {"limit_usd": 10}, format="json"), 200)
        assignment = {"key_hashes": [org.inference_hash]}
        response = api.post(f"/api/v1/guardrails/{ids['guardrail']}/assignments/keys", assignment, format="json")
        assert response.status_code == 200, response.content
        return cls(org=org, ids=ids)

    def url(self, operation: Operation) -> str:
        """The operation's path aimed at this organization's resources; KeyError for an unknown parameter."""
        if not operation.params:
            return operation.path
        values = {
            "hash": self.ids["key"],
            "slug": self.ids["preset"],
            "version": "1",
            "interval": "daily",
            "vendor": "echo",
            "author": "echo",
            "name": "echo-1",
            "id": self.ids.get(self._id_kind(operation.path), ""),
        }
        assert values["id"] or "{id}" not in operation.path, f"no resource for the {{id}} of {operation}"
        return re.sub(r"{(\w+)}", lambda m: values[m.group(1)], operation.path)

    @staticmethod
    def _id_kind(path: str) -> str:
        for prefix, kind in (
            ("/api/v1/byok/", "byok"),
            ("/api/v1/guardrails/", "guardrail"),
            ("/api/v1/observability/destinations/", "destination"),
            ("/api/v1/scim/group-mappings/", "group_mapping"),
            ("/api/v1/scim/groups/", "scim_group"),
            ("/api/v1/workspaces/", "workspace"),
        ):
            if path.startswith(prefix):
                return kind
        return "unknown:" + path


def write_body(operation: Operation, attacker: OrgFixture) -> dict | None:
    """A valid body for a write, naming only the attacker's own objects (so only the target's id is foreign)."""
    if operation.method in ("GET", "DELETE"):
        return None
    path = operation.path
    if path.endswith("/assignments/keys") or path.endswith("/assignments/keys/remove"):
        return {"key_hashes": [attacker.inference_hash]}
    if "/assignments/members" in path:
        return {"member_user_ids": [str(attacker.admin.id)]}
    if path.endswith("/members/add") or path.endswith("/members/remove"):
        return {"user_ids": [str(attacker.admin.id)]}
    if "/budgets/" in path:
        return {"limit_usd": 1}
    if path.startswith("/api/v1/scim/group-mappings/"):
        return {"role": "admin"}
    if path.startswith("/api/v1/presets/") and path.endswith("/messages"):
        return {"model": "echo/echo-1", "messages": [{"role": "user", "content": "hi"}]}
    if path.startswith("/api/v1/presets/"):
        return {"model": "echo/echo-1"}
    if path == "/api/v1/keys/{hash}":
        return {"name": "taken over", "disabled": True}
    return {"name": "taken over"}
