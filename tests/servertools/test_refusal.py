"""Plugins and server tools the gateway does not implement are refused with a 400 naming them, end to end."""

from __future__ import annotations

import pytest

from inference.plugins.registry import PLUGIN_IDS, load
from presets.models import PresetVersion
from tests.inference.conftest import generations

UNSUPPORTED = sorted(PLUGIN_IDS - load().keys())


@pytest.mark.parametrize("plugin_id", UNSUPPORTED[:2])
def test_request_with_unsupported_plugin_gets_400(http, plugin_id):
    response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi", "plugins": [{"id": plugin_id}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == 400
    assert error["metadata"]["field"] == "plugins[0].id"
    assert f"plugin '{plugin_id}' is not supported yet" in error["message"]


def test_request_with_unsupported_server_tool_gets_400(http):
    body = {"model": "echo/echo-1", "input": "hi", "tools": [{"type": "service:mcp"}]}
    response = http.post("/responses", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "tools[0].type"


def test_preset_stored_with_an_unsupported_plugin_is_refused_at_use(org, http):
    created = org.client().post("/api/v1/presets/legacy/responses", {"model": "echo/echo-1"}, format="json")
    assert created.status_code == 200, created.json()
    # A version written before the kind was refused (or by hand): the merged request is checked again.
    PresetVersion.objects.update(config={"model": "echo/echo-1", "plugins": [{"id": "retired-plugin"}]})
    from gateway_project.policy_cache import bump_policy_version

    bump_policy_version()
    response = http.post("/responses", json={"model": "@preset/legacy", "input": "hi"})
    assert response.status_code == 400, response.text
    assert "plugin 'retired-plugin' is not supported yet" in response.json()["error"]["message"]
    rows = generations(1)
    assert rows[0].status == "failed" and rows[0].error_code == 400
