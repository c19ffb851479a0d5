"""Operator commands: bootstrap, create_api_key, load_catalog."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.keys import hash_key
from accounts.models import ApiKey, Organization
from inference.models import Endpoint, Provider

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_bootstrap_is_idempotent():
    first = json.loads(_run("bootstrap", "--json"))
    assert first["management_key"] and first["inference_key"]
    assert ApiKey.objects.get(hash=hash_key(first["management_key"])).is_management
    second = json.loads(_run("bootstrap", "--json"))
    assert second == {**first, "management_key": None, "inference_key": None, "admin_password": None}
    assert Organization.objects.count() == 1
    assert Provider.objects.filter(slug="echo").exists()


def test_create_api_key(org):
    result = json.loads(
        _run("create_api_key", "--name", "ops", "--management", "--json", "--organization", str(org.organization.id))
    )
    assert result["is_management_key"] is True
    assert result["hash"] == hash_key(result["key"])
    assert result["workspace_id"] == str(org.workspace.id)
    with pytest.raises(CommandError):
        _run("create_api_key", "--name", "x", "--workspace", "missing", "--organization", str(org.organization.id))


def test_load_catalog(tmp_path):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "providers:\n  - {slug: p1, api_format: openai-chat, base_url: 'http://127.0.0.1:9/v1'}\n"
        "models:\n  - {slug: v/m1, vendor: v}\n"
        "endpoints:\n  - {model: v/m1, provider: p1, prompt_price: '0.000001', completion_price: '0.000002'}\n"
    )
    assert "1 providers, 1 models, 1 endpoints" in _run("load_catalog", str(catalog))
    assert str(Endpoint.objects.get(provider__slug="p1").completion_price).startswith("0.000002")
    catalog.write_text("endpoints:\n  - {model: v/none, provider: p1}\n")
    with pytest.raises(CommandError, match="unknown model"):
        _run("load_catalog", str(catalog))
