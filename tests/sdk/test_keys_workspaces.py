"""SDK areas `api_keys`, `workspaces` (records and members) and `organization` against the live gateway."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from openrouter import errors

from accounts import services
from accounts.models import OrgRole
from budgets.models import WorkspaceBudget
from guardrails.models import Guardrail, GuardrailKeyAssignment


def test_current_key_metadata(inference_sdk, org):
    data = inference_sdk.api_keys.get_current_key_metadata().data
    assert data.label.startswith("sk-")
    assert data.is_management_key is False and data.is_provisioning_key is False
    assert data.organization_id == str(org.organization.id)
    assert data.workspace_id == str(org.workspace.id)
    assert data.is_free_tier is False
    assert data.allowed_data_regions == ["global", "europe", "us"]
    assert data.budgets == [] and data.effective_budget is None
    assert (data.rate_limit.interval, data.rate_limit.requests) == ("1m", -1)
    assert (data.free_model_daily_requests.limit, data.free_model_daily_requests.used) == (-1, 0)


def test_current_key_reports_its_budgets_regions_and_rate_limit(inference_sdk, org):
    key = org.organization.api_keys.get(hash=org.inference_hash)
    key.limit, key.limit_reset, key.requests_per_minute = Decimal("5"), "daily", 30
    key.save()
    org.workspace.requests_per_minute = 20
    org.workspace.save()
    budget = WorkspaceBudget.objects.create(workspace=org.workspace, reset_interval="monthly", limit_usd=Decimal("100"))
    guardrail = Guardrail.objects.create(
        organization=org.organization,
        workspace=org.workspace,
        name="eu only",
        allowed_data_regions=["europe"],
        limit_usd=Decimal("2"),
        reset_interval="weekly",
    )
    GuardrailKeyAssignment.objects.create(guardrail=guardrail, api_key=key)

    data = inference_sdk.api_keys.get_current_key_metadata().data

    assert data.allowed_data_regions == ["europe"]
    assert data.rate_limit.requests == 20
    layers = {b.scope: b for b in data.budgets}
    assert [b.scope for b in data.budgets] == ["api_key", "workspace", "key_limit"]
    assert layers["api_key"].guardrail_id == str(guardrail.id) and layers["api_key"].limit_usd == 2
    assert layers["api_key"].reset_interval == "weekly" and layers["api_key"].resets_at is not None
    assert layers["workspace"].budget_id == str(budget.id) and layers["workspace"].remaining_usd == 100
    assert layers["key_limit"].limit_usd == 5 and layers["key_limit"].spend_usd == 0
    assert data.effective_budget.scope == "api_key"


def test_api_keys_create_list_get_update_delete(sdk, org):
    created = sdk.api_keys.create(name="sdk key", limit=3.5, limit_reset="weekly")
    assert created.key.startswith("sk-")
    record = created.data
    assert record.name == "sdk key" and record.limit == 3.5 and record.external_user is None
    assert record.workspace_id == str(org.workspace.id)

    listed = sdk.api_keys.list()
    assert record.hash in {k.hash for k in listed.data}

    fetched = sdk.api_keys.get(hash=record.hash).data
    assert fetched.limit_reset == "weekly"

    updated = sdk.api_keys.update(hash=record.hash, name="renamed", disabled=True).data
    assert (updated.name, updated.disabled) == ("renamed", True)
    assert record.hash in {k.hash for k in sdk.api_keys.list(include_disabled=True).data}
    assert record.hash not in {k.hash for k in sdk.api_keys.list(include_disabled=False).data}
    assert record.hash in {k.hash for k in sdk.api_keys.list(include_expired=False).data}

    assert sdk.api_keys.delete(hash=record.hash).DELETED is True
    with pytest.raises(errors.OpenRouterError):
        sdk.api_keys.get(hash=record.hash)


def test_workspaces_create_list_get_update_delete(sdk, org):
    created = sdk.workspaces.create(
        name="Research", slug="research", description="r", io_logging_sampling_rate=0.5,
        is_observability_io_logging_enabled=False,
    ).data  # fmt: skip
    assert (created.slug, created.io_logging_sampling_rate) == ("research", 0.5)
    assert created.is_observability_io_logging_enabled is False
    assert created.is_observability_broadcast_enabled is True
    assert created.is_data_discount_logging_enabled is False and created.io_logging_api_key_ids is None
    assert created.default_text_model is None and created.created_by == str(org.admin.id)

    assert "research" in {w.slug for w in sdk.workspaces.list().result.data}
    assert sdk.workspaces.get(id="research").data.id == created.id
    updated = sdk.workspaces.update(id=created.id, name="Research 2", is_observability_broadcast_enabled=False).data
    assert (updated.name, updated.is_observability_broadcast_enabled) == ("Research 2", False)
    assert sdk.workspaces.delete(id=created.id).DELETED is True


def test_workspace_settings_without_meaning_here_are_refused_by_name(sdk):
    with pytest.raises(errors.OpenRouterError) as raised:
        sdk.workspaces.create(name="W", slug="w", default_text_model="openai/gpt-4o")
    assert raised.value.status_code == 400
    assert "default_text_model" in raised.value.body


def test_workspace_members_add_list_remove(sdk, org):
    user = services.user_create(organization=org.organization, username=f"u-{uuid.uuid4().hex[:8]}")
    added = sdk.workspaces.bulk_add_members(id=str(org.workspace.id), user_ids=[str(user.id)])
    assert added.added_count == 1
    assert [(m.user_id, m.role) for m in added.data] == [(str(user.id), "member")]

    members = sdk.workspaces.list_members(id=str(org.workspace.id)).result
    assert str(user.id) in {m.user_id for m in members.data}
    assert all(m.id for m in members.data)

    removed = sdk.workspaces.bulk_remove_members(id=str(org.workspace.id), user_ids=[str(user.id)])
    assert removed.removed_count == 1


def test_organization_members(sdk, org):
    services.user_create(organization=org.organization, username="second", org_role=OrgRole.MEMBER)
    page = sdk.organization.list_members(offset=0, limit=1).result
    assert page.total_count == 2 and len(page.data) == 1
    assert page.data[0].id == str(org.admin.id) and page.data[0].role == "org:admin"
    second = sdk.organization.list_members(offset=1, limit=1).result.data
    assert second[0].role == "org:member"
