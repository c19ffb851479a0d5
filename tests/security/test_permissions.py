"""Generated permission test: every admin operation of the OpenAPI document refuses an inference key (403)
and a missing, malformed or unknown key (401), in the envelope, and changes nothing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.conftest import make_org
from tests.security.enumeration import ANY_KEY_OPERATIONS, OrgResources, management_operations, write_body
from tests.security.test_isolation import call, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def resources():
    return OrgResources.create(make_org("Owner"))


def assert_error(response, status: int, where: str) -> None:
    assert response.status_code == status, f"{where}: {response.status_code} {response.content[:200]!r}"
    assert response.json()["error"]["code"] == status, where


def test_every_admin_operation_refuses_an_inference_key_with_403(resources):
    org = resources.org
    operations = [op for op in management_operations() if (op.method, op.path) not in ANY_KEY_OPERATIONS]
    assert len(operations) >= 50
    before = snapshot(resources)
    client = org.client(org.inference_key)
    for operation in operations:
        response = call(client, operation.method, resources.url(operation), write_body(operation, org))
        assert_error(response, 403, str(operation))
    assert snapshot(resources) == before


@pytest.mark.parametrize("authorization", [None, "Bearer", "Bearer sk-gw-v1-unknown", "Basic dXNlcjpwYXNz"])
def test_every_operation_refuses_a_missing_or_unknown_key_with_401(resources, authorization, settings):
    settings.GATEWAY_AUTH_FAILURES_PER_MINUTE = 0  # more operations than the per-address limit of unknown keys
    org = resources.org
    before = snapshot(resources)
    client = APIClient()
    if authorization:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    for operation in management_operations():
        response = call(client, operation.method, resources.url(operation), write_body(operation, org))
        assert_error(response, 401, f"{operation} with {authorization!r}")
    assert snapshot(resources) == before


def test_a_disabled_management_key_is_refused_everywhere(resources):
    from accounts.models import ApiKey

    org = resources.org
    ApiKey.objects.filter(hash=org.management_hash).update(disabled=True)
    client = org.client()
    for operation in management_operations():
        response = call(client, operation.method, resources.url(operation), write_body(operation, org))
        assert response.status_code in (401, 403), f"{operation}: {response.status_code}"
