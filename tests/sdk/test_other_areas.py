"""SDK areas `guardrails` (all 13 operations), `presets`, workspace budgets, `scim`, `datasets` and
`responses` against the live gateway."""

from __future__ import annotations

import uuid

import pytest

from accounts import services
from scim.models import ScimGroup
from tests.inference.conftest import add_endpoint


def test_guardrails_every_operation(sdk, org):
    created = sdk.guardrails.create(
        name="strict", enforce_zdr_openai=True, allowed_data_regions=["europe"], limit_usd=5, reset_interval="daily",
        content_filter_builtins=[{"slug": "email", "action": "redact"}],
    ).data  # fmt: skip
    assert created.name == "strict" and created.limit_usd == 5
    assert created.id in {g.id for g in sdk.guardrails.list(workspace_id=str(org.workspace.id)).result.data}
    assert sdk.guardrails.get(id=created.id).data.allowed_data_regions == ["europe"]
    assert sdk.guardrails.update(id=created.id, description="d").data.description == "d"

    key, user = org.inference_hash, str(org.admin.id)
    assert sdk.guardrails.bulk_assign_keys(id=created.id, key_hashes=[key]).assigned_count == 1
    assert [a.key_hash for a in sdk.guardrails.list_guardrail_key_assignments(id=created.id).result.data] == [key]
    assert key in {a.key_hash for a in sdk.guardrails.list_key_assignments().result.data}
    assert sdk.guardrails.bulk_unassign_keys(id=created.id, key_hashes=[key]).unassigned_count == 1

    assert sdk.guardrails.bulk_assign_members(id=created.id, member_user_ids=[user]).assigned_count == 1
    members = sdk.guardrails.list_guardrail_member_assignments(id=created.id).result.data
    assert [m.user_id for m in members] == [user]
    assert user in {m.user_id for m in sdk.guardrails.list_member_assignments().result.data}
    assert sdk.guardrails.bulk_unassign_members(id=created.id, member_user_ids=[user]).unassigned_count == 1

    assert sdk.guardrails.delete(id=created.id).DELETED is True


def test_guardrail_public_zdr_name_sets_our_field(sdk, api):
    created = sdk.guardrails.create(name="zdr", enforce_zdr_openai=True).data
    assert api.get(f"/api/v1/guardrails/{created.id}").json()["data"]["enforce_zdr_vendor_a"] is True


def test_presets_every_operation(sdk):
    first = sdk.presets.create_presets_responses(slug="p", model="openai/gpt-4o-mini", temperature=0.2).data
    assert first.slug == "p" and first.designated_version.version == 1
    second = sdk.presets.create_presets_messages(
        slug="p", model="openai/gpt-4o-mini", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    ).data
    assert second.designated_version.version == 2
    third = sdk.presets.create_presets_chat_completions(
        slug="p", model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "x"}]
    ).data
    assert third.designated_version.version == 3
    assert [p.slug for p in sdk.presets.list().result.data] == ["p"]
    assert sdk.presets.get(slug="p").data.designated_version.version == 3
    assert [v.version for v in sdk.presets.list_versions(slug="p").result.data] == [1, 2, 3]
    assert sdk.presets.get_version(slug="p", version="1").data.config["temperature"] == 0.2


def test_workspace_budgets_every_operation(sdk, org):
    ws = str(org.workspace.id)
    assert sdk.workspaces.set_budget(workspace_ref=ws, interval="daily", limit_usd=10).data.limit_usd == 10
    listed = sdk.workspaces.list_budgets(workspace_ref=ws)
    assert [b.reset_interval for b in listed.data] == ["daily"]
    assert sdk.workspaces.get_budget(workspace_ref=ws, interval="daily").data.limit_usd == 10
    assert sdk.workspaces.delete_budget(workspace_ref=ws, interval="daily").DELETED is True


def test_scim_mappings_and_groups(sdk, org):
    group = ScimGroup.objects.create(organization=org.organization, display_name="eng")
    workspace = services.workspace_create(organization=org.organization, name="Eng", slug=f"eng-{uuid.uuid4().hex[:6]}")
    created = sdk.scim.create(scim_group_id=str(group.id), workspace_id=str(workspace.id), role="member").data
    assert created.role == "member"
    assert [m.id for m in sdk.scim.list_mappings().result.data] == [created.id]
    assert sdk.scim.read(id=created.id).data.workspace_id == str(workspace.id)
    assert sdk.scim.update(id=created.id, role="admin").data.role == "admin"
    assert sdk.scim.delete(id=created.id, keep_members=True).DELETED is True
    groups = sdk.scim.list_groups().result.data
    assert [(g.id, g.organization_id) for g in groups] == [(str(group.id), str(org.organization.id))]
    assert sdk.scim.list_groups(display_name="eng").result.total_count == 1
    assert sdk.scim.list_groups(display_name="ops").result.total_count == 0


def test_rankings_dataset(inference_sdk):
    from django.core.management import call_command

    call_command("aggregate_rankings", verbosity=0)  # `meta.as_of` is null until the first aggregation
    result = inference_sdk.datasets.get_rankings_daily()
    assert result.data == [] and result.meta.version == "v1"


@pytest.fixture
def echo_model(transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")


def test_responses_send(inference_sdk, echo_model):
    from tests.inference.conftest import wait_idle

    response = inference_sdk.responses.send(model="echo/echo-1", input="Say hello")
    wait_idle()
    assert response.status == "completed"
    assert "Say hello" in response.output[0].content[0].text
