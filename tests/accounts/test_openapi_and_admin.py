"""The generated OpenAPI schema and the Django admin."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from accounts.models import ApiKey

pytestmark = pytest.mark.django_db


def test_openapi_schema_is_served_and_documents_the_envelope(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert "ErrorEnvelope" in schema["components"]["schemas"]
    assert "/api/v1/keys" in schema["paths"]
    assert "401" in schema["paths"]["/api/v1/keys"]["get"]["responses"]
    assert client.get("/api/v1/docs").status_code == 200


def test_openapi_schema_validates_without_warnings():
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null", stdout=out, stderr=out)


def test_admin_changelists_and_key_creation(org):
    org.admin.is_staff = True
    org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    for model in ("organization", "user", "workspace", "workspacemember", "apikey"):
        assert client.get(f"/admin/accounts/{model}/").status_code == 200, model
    for model in ("provider", "model", "endpoint", "generation"):
        assert client.get(f"/admin/inference/{model}/").status_code == 200, model
    response = client.post(
        "/admin/accounts/apikey/add/",
        {"name": "from-admin", "workspace": str(org.workspace.id), "limit_reset": "", "is_management": "on"},
        follow=True,
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    raw = next(m.split(": ", 1)[1] for m in shown if "shown once" in m)
    key = ApiKey.objects.get(name="from-admin")
    from accounts.keys import hash_key

    assert key.hash == hash_key(raw) and key.is_management
