"""Generated organization-isolation test: every management operation of the OpenAPI document, aimed at
organization A's resources with organization B's management key, answers 404 and changes nothing.

The operations come from /api/v1/openapi.json, so a new endpoint is covered (or fails here until
tests/security/enumeration.py knows which resource its path parameter names).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import make_org
from tests.security.enumeration import (
    CATALOG_OPERATIONS,
    QUERY_LOOKUP_OPERATIONS,
    OrgResources,
    management_operations,
    write_body,
)

pytestmark = pytest.mark.django_db

# A's own management key is used to take the snapshots; /analytics/usage echoes its default window (the last 30
# days up to the next whole hour), which moves when a run crosses an hour.
VOLATILE = {"last_used_at", "start", "end"}


def _normalize(value):
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


SKIPPED = CATALOG_OPERATIONS | QUERY_LOOKUP_OPERATIONS


def snapshot(resources: OrgResources) -> dict[str, tuple[int, object]]:
    """Everything organization A sees through every GET operation."""
    api = resources.org.client()
    seen = {}
    for operation in management_operations():
        if operation.method == "GET" and (operation.method, operation.path) not in SKIPPED:
            response = api.get(resources.url(operation))
            seen[str(operation)] = (response.status_code, _normalize(response.json()))
    return seen


def call(client, method: str, url: str, body):
    return (
        getattr(client, method.lower())(url, body, format="json")
        if body is not None
        else getattr(client, method.lower())(url)
    )


@pytest.fixture
def victim():
    return OrgResources.create(make_org("Victim"))


@pytest.fixture
def attacker():
    return make_org("Attacker")


def test_every_operation_on_another_organizations_resource_is_404_and_changes_nothing(victim, attacker):
    operations = [op for op in management_operations() if op.params and (op.method, op.path) not in CATALOG_OPERATIONS]
    assert len(operations) >= 30
    before = snapshot(victim)
    assert all(status == 200 for status, _ in before.values()), before
    client = attacker.client()
    failures = []
    # Preset slugs are per organization: B's POST to A's slug creates B's own preset, so those run last.
    ordered = sorted(operations, key=lambda op: op.method == "POST" and op.path.startswith("/api/v1/presets/"))
    for operation in ordered:
        url = victim.url(operation)
        response = call(client, operation.method, url, write_body(operation, attacker))
        creates_own_preset = operation.method == "POST" and operation.path.startswith("/api/v1/presets/")
        expected = 200 if creates_own_preset else 404
        if response.status_code != expected:
            failures.append(f"{operation} ({url}): {response.status_code} {response.content[:200]!r}")
        elif expected == 404 and response.json()["error"]["code"] != 404:
            failures.append(f"{operation}: 404 outside the envelope")
    assert not failures, "\n".join(failures)
    assert snapshot(victim) == before


def test_lists_of_another_organization_show_none_of_its_resources(victim, attacker):
    client = attacker.client()
    secrets = [value for kind, value in victim.ids.items() if kind != "preset"] + [victim.org.management_hash]
    for operation in management_operations():
        if operation.method != "GET" or operation.params:
            continue
        text = client.get(operation.path).content.decode()
        leaked = [value for value in secrets if value in text]
        assert not leaked, f"{operation} shows {leaked}"


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/v1/keys", {"name": "k", "workspace_id": "{workspace}"}),
        ("/api/v1/guardrails", {"name": "g", "workspace_id": "{workspace}"}),
        ("/api/v1/byok", {"provider": "openai", "key": "sk-x-12345678", "workspace_id": "{workspace}"}),
        (
            "/api/v1/observability/destinations",
            {"name": "d", "type": "webhook", "config": {"url": "https://8.8.8.8/"}, "workspace_id": "{workspace}"},
        ),
        (
            "/api/v1/scim/group-mappings",
            {"scim_group_id": "{scim_group}", "workspace_id": "{workspace}", "role": "admin"},
        ),
        (
            "/api/v1/observability/destinations",
            {"name": "d", "type": "webhook", "config": {"url": "https://8.8.8.8/"}, "api_key_hashes": ["{key}"]},
        ),
        ("/api/v1/byok", {"provider": "openai", "key": "sk-x-12345678", "allowed_api_key_hashes": ["{key}"]}),
    ],
)
def test_creating_with_another_organizations_ids_in_the_body_is_refused(victim, attacker, path, body):
    text = json.dumps(body)
    for kind, value in victim.ids.items():
        text = text.replace("{" + kind + "}", value)
    before = snapshot(victim)
    response = attacker.client().post(path, json.loads(text), format="json")
    assert response.status_code in (400, 404), response.content
    assert response.json()["error"]["code"] == response.status_code
    assert snapshot(victim) == before
