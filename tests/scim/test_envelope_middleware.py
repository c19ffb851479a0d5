"""The gateway's ErrorEnvelopeMiddleware leaves SCIM error bodies alone and still wraps everything else."""

from __future__ import annotations

import json

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from gateway_project.api.middleware import ErrorEnvelopeMiddleware
from tests.scim.conftest import ERROR_SCHEMA


def run(response: HttpResponse, path: str = "/api/v1/scim/v2/Users") -> HttpResponse:
    return ErrorEnvelopeMiddleware(lambda request: response)(RequestFactory().get(path))


def test_scim_error_passes_through():
    body = {"schemas": [ERROR_SCHEMA], "status": "409", "scimType": "uniqueness", "detail": "taken"}
    response = run(HttpResponse(json.dumps(body), status=409, content_type="application/scim+json"))
    assert response.status_code == 409
    assert response["Content-Type"] == "application/scim+json"
    assert json.loads(response.content) == body


def test_other_non_json_errors_are_still_wrapped():
    response = run(HttpResponse("<h1>Not Found</h1>", status=404, content_type="text/html"))
    assert response.status_code == 404
    assert json.loads(response.content) == {"error": {"code": 404, "message": "Resource not found"}}


@pytest.mark.django_db
def test_management_endpoints_keep_the_envelope(client):
    response = client.get("/api/v1/scim/group-mappings")
    assert response.status_code == 401
    assert response.json() == {"error": {"code": 401, "message": "Missing Authentication header"}}
    response = client.get("/api/v1/scim/unknown")
    assert response.status_code == 404 and response.json()["error"]["code"] == 404
