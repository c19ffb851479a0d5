"""POST /presets/{slug}/responses and /messages: creation, versioning, what is persisted."""

import pytest

from presets.models import Preset, PresetVersion

pytestmark = pytest.mark.django_db

RESPONSES_BODY = {
    "model": "openai/gpt-4o-mini",
    "instructions": "You are terse.",
    "temperature": 0.2,
    "top_p": 0.9,
    "max_output_tokens": 300,
    "provider": {"allow_fallbacks": False},
    "reasoning": {"effort": "low"},
    # per-request fields a preset does not keep:
    "input": "hello",
    "stream": True,
    "prompt": {"id": "p1", "variables": {}},
    "metadata": {"a": "b"},
    "session_id": "s1",
    "user": "u1",
    "messages": [{"role": "user", "content": "x"}],
}


def test_create_from_responses_persists_only_preset_fields(api, org):
    response = api.post("/api/v1/presets/terse/responses", RESPONSES_BODY, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert data["slug"] == "terse" and data["name"] == "terse"
    assert data["status"] == "active" and data["status_updated_at"] is None
    assert data["description"] is None
    assert data["workspace_id"] == str(org.workspace.id)
    assert data["creator_user_id"] == str(org.admin.id)
    version = data["designated_version"]
    assert data["designated_version_id"] == version["id"]
    assert version["preset_id"] == data["id"]
    assert version["version"] == 1
    assert version["system_prompt"] == "You are terse."
    assert version["creator_id"] == str(org.admin.id)
    assert version["config"] == {
        "model": "openai/gpt-4o-mini",
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 300,
        "provider": {"allow_fallbacks": False},
        "reasoning": {"effort": "low"},
    }
    assert data["created_at"].endswith("Z") and version["created_at"].endswith("Z")


def test_each_post_creates_the_next_version_and_designates_it(api):
    first = api.post("/api/v1/presets/p/responses", {"model": "a/m1"}, format="json").json()["data"]
    second = api.post("/api/v1/presets/p/messages", {"model": "a/m2", "max_tokens": 5}, format="json").json()["data"]
    third = api.post("/api/v1/presets/p/responses", {"model": "a/m3"}, format="json").json()["data"]
    assert first["id"] == second["id"] == third["id"]
    assert [first, second, third][-1]["designated_version"]["version"] == 3
    assert second["designated_version"]["config"] == {"model": "a/m2", "max_tokens": 5}
    assert third["designated_version"]["config"] == {"model": "a/m3"}
    assert Preset.objects.count() == 1
    assert list(PresetVersion.objects.order_by("version").values_list("version", flat=True)) == [1, 2, 3]
    # the preset record now designates version 3
    got = api.get("/api/v1/presets/p").json()["data"]
    assert got["designated_version"]["version"] == 3
    assert got["designated_version_id"] == third["designated_version"]["id"]


def test_create_from_messages_persists_only_preset_fields(api):
    body = {
        "model": "anthropic/claude-sonnet",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 512,
        "system": [{"type": "text", "text": "Be kind."}, {"type": "text", "text": "Be brief."}],
        "fallbacks": [{"model": "openai/gpt-4o-mini"}],
        "output_config": {"effort": "high"},
        "speed": "fast",
        "route": "fallback",
        "session_id": "s",
        "user": "u",
        "trace": {"trace_id": "t"},
        "stream": True,
        "cache_control": {"type": "ephemeral", "ttl": "5m"},
        "plugins": [{"id": "web"}],
        "stop_server_tools_when": [{"type": "step_count_is", "step_count": 3}],
        "provider": {"order": ["anthropic"]},
        "temperature": 0.5,
    }
    response = api.post("/api/v1/presets/kind/messages", body, format="json")
    assert response.status_code == 200, response.json()
    version = response.json()["data"]["designated_version"]
    assert version["system_prompt"] == "Be kind.\n\nBe brief."
    assert version["config"] == {
        "model": "anthropic/claude-sonnet",
        "fallbacks": [{"model": "openai/gpt-4o-mini"}],
        "max_tokens": 512,
        "temperature": 0.5,
        "provider": {"order": ["anthropic"]},
        "plugins": [{"id": "web"}],
        "route": "fallback",
        "stop_server_tools_when": [{"type": "step_count_is", "step_count": 3}],
        "cache_control": {"type": "ephemeral", "ttl": "5m"},
        "output_config": {"effort": "high"},
        "speed": "fast",
    }


def test_messages_system_string_and_absent(api):
    with_string = api.post("/api/v1/presets/s1/messages", {"model": "a/b", "system": "Hi."}, format="json")
    assert with_string.json()["data"]["designated_version"]["system_prompt"] == "Hi."
    without = api.post("/api/v1/presets/s2/messages", {"model": "a/b"}, format="json")
    assert without.json()["data"]["designated_version"]["system_prompt"] == ""


def test_creator_is_the_key_hash_when_the_key_has_no_creator(org):
    from accounts import services as account_services

    created = account_services.api_key_create(organization=org.organization, name="robot", is_management=True)
    response = org.client(created.raw_key).post("/api/v1/presets/r/responses", {"model": "a/b"}, format="json")
    data = response.json()["data"]
    assert data["creator_user_id"] == created.api_key.hash
    assert data["designated_version"]["creator_id"] == created.api_key.hash


def test_a_preset_needs_a_model(api):
    response = api.post("/api/v1/presets/nomodel/responses", {"temperature": 1}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "model"
    assert not Preset.objects.exists()
    assert api.post("/api/v1/presets/m/responses", {"models": ["a/b", "c/d"]}, format="json").status_code == 200


@pytest.mark.parametrize("slug", ["a", "my-preset_v1.2~x", "A" * 200])
def test_url_safe_slugs_are_accepted(api, slug):
    response = api.post(f"/api/v1/presets/{slug}/responses", {"model": "a/b"}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["slug"] == slug


@pytest.mark.parametrize("slug", ["has%20space", "caf%C3%A9", "a%3Ab", "..", "A" * 201])
def test_slugs_that_are_not_url_safe_give_400(api, slug):
    response = api.post(f"/api/v1/presets/{slug}/responses", {"model": "a/b"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "slug"
    assert not Preset.objects.exists()


def test_the_body_must_be_an_object(api):
    for path in ("responses", "messages"):
        response = api.post(f"/api/v1/presets/x/{path}", [1, 2], format="json")
        assert response.status_code == 400
        assert response.json()["error"]["metadata"]["field"] == "body"


def test_an_archived_preset_takes_no_new_versions_but_a_disabled_one_does(api):
    api.post("/api/v1/presets/old/responses", {"model": "a/b"}, format="json")
    Preset.objects.filter(slug="old").update(status="disabled")
    assert api.post("/api/v1/presets/old/responses", {"model": "a/c"}, format="json").status_code == 200
    Preset.objects.filter(slug="old").update(status="archived")
    response = api.post("/api/v1/presets/old/responses", {"model": "a/d"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == 409
    assert PresetVersion.objects.count() == 2


def test_slugs_are_per_organization(api, org, other_org):
    mine = api.post("/api/v1/presets/shared/responses", {"model": "a/b"}, format="json").json()["data"]
    theirs = other_org.client().post("/api/v1/presets/shared/responses", {"model": "c/d"}, format="json")
    theirs = theirs.json()["data"]
    assert mine["id"] != theirs["id"]
    assert theirs["designated_version"]["version"] == 1
    assert theirs["workspace_id"] == str(other_org.workspace.id)


def test_management_key_required(org):
    inference = org.client(org.inference_key)
    response = inference.post("/api/v1/presets/x/responses", {"model": "a/b"}, format="json")
    assert response.status_code == 403
    assert inference.get("/api/v1/presets").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().post("/api/v1/presets/x/messages", {"model": "a/b"}, format="json").status_code == 401
    assert not Preset.objects.exists()


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("responses", {"model": "a/b\u0000c"}, "model"),
        ("responses", {"model": "a/b", "provider": {"order": ["x\u0000"]}}, "provider.order[0]"),
        # refused at parse time, naming the member the client sent (not the stored system_prompt)
        ("responses", {"model": "a/b", "instructions": "nul\u0000"}, "instructions"),
        ("messages", {"model": "a/b", "system": "nul\u0000"}, "system"),
    ],
)
def test_nul_characters_are_refused_not_stored(api, kind, body, field):
    response = api.post(f"/api/v1/presets/nul/{kind}", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == field
    assert not Preset.objects.exists()
