"""Every failure of every endpoint is the error envelope with code == HTTP status."""

import pytest
from django.test import override_settings
from django.urls import path
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def _boom(request):
    raise RuntimeError("secret internal detail")


urlpatterns = [path("api/v1/boom", _boom)]


def test_unknown_path_is_404_envelope(api):
    response = api.get("/api/v1/does-not-exist")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": 404, "message": "Resource not found"}}


def test_unknown_path_without_key_is_404_envelope():
    response = APIClient().get("/api/v1/nope/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == 404


def test_wrong_method_is_405_envelope(api):
    response = api.delete("/api/v1/key")
    assert response.status_code == 405
    body = response.json()
    assert body["error"]["code"] == 405
    assert "DELETE" in body["error"]["message"]


def test_malformed_json_is_400_envelope(api):
    response = api.post("/api/v1/workspaces", data='{"name": ', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400
    assert "JSON" in response.json()["error"]["message"]


@override_settings(GATEWAY_MAX_BODY_BYTES=100)
def test_oversized_body_is_413_envelope(api):
    response = api.post("/api/v1/workspaces", data={"name": "x" * 500}, format="json")
    assert response.status_code == 413
    assert response.json() == {"error": {"code": 413, "message": "Request payload too large"}}


@override_settings(ROOT_URLCONF=__name__)
def test_unhandled_error_is_500_envelope_without_traceback(org):
    client = APIClient(raise_request_exception=False)
    response = client.get("/api/v1/boom")
    assert response.status_code == 500
    assert response.json() == {"error": {"code": 500, "message": "Internal Server Error"}}
    assert b"secret internal detail" not in response.content
    assert b"Traceback" not in response.content


def test_validation_error_names_the_field(api):
    response = api.post("/api/v1/workspaces", data={"name": ""}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("name:")
    assert error["metadata"]["field"] == "name"


@pytest.mark.parametrize("query", ["offset=-1", "limit=0", "limit=101", "limit=abc"])
def test_pagination_out_of_range_is_400(api, query):
    response = api.get(f"/api/v1/keys?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] in ("offset", "limit")


def test_security_headers(api):
    response = api.get("/api/v1/key")
    assert response["X-Content-Type-Options"] == "nosniff"
