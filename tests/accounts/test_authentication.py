"""Bearer-key authentication and the management-key permission, as a client sees them."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey

pytestmark = pytest.mark.django_db


def test_missing_header_is_401_with_envelope():
    response = APIClient().get("/api/v1/key")
    assert response.status_code == 401
    assert response.json() == {"error": {"code": 401, "message": "Missing Authentication header"}}


@pytest.mark.parametrize("header", ["Bearer sk-gw-v1-unknown", "Basic abc", "Bearer "])
def test_unknown_or_malformed_key_is_401(org, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/key")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == 401


def test_disabled_key_is_401(org):
    ApiKey.objects.filter(hash=org.inference_hash).update(disabled=True)
    response = org.client(org.inference_key).get("/api/v1/key")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "API key is disabled"


def test_expired_key_is_401(org):
    ApiKey.objects.filter(hash=org.inference_hash).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = org.client(org.inference_key).get("/api/v1/key")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "API key has expired"


def test_key_not_yet_expired_works(org):
    ApiKey.objects.filter(hash=org.inference_hash).update(expires_at=timezone.now() + timedelta(hours=1))
    assert org.client(org.inference_key).get("/api/v1/key").status_code == 200


def test_inference_key_on_management_endpoint_is_403(org):
    response = org.client(org.inference_key).get("/api/v1/keys")
    assert response.status_code == 403
    assert response.json() == {"error": {"code": 403, "message": "Only management keys can perform this operation"}}


def test_current_key_for_both_kinds(org):
    management = org.client().get("/api/v1/key").json()["data"]
    assert management["is_management_key"] is True
    assert management["hash"] == org.management_hash
    inference = org.client(org.inference_key).get("/api/v1/key").json()["data"]
    assert inference["is_management_key"] is False
    assert inference["usage"] == 0 and inference["limit_remaining"] is None


def test_last_used_at_is_recorded(org):
    org.client().get("/api/v1/key")
    assert ApiKey.objects.get(hash=org.management_hash).last_used_at is not None
