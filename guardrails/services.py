"""Writes of the guardrails app: guardrails, the workspace default guardrail, key and member assignments."""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Organization, Workspace
from accounts.selectors import organization_keys, organization_users
from gateway_project.api.errors import GatewayError, validation_error
from guardrails.models import (
    BOOLEAN_FIELDS,
    LIST_FIELDS,
    ZDR_FIELDS,
    Guardrail,
    GuardrailKeyAssignment,
    GuardrailMemberAssignment,
)

PLAIN_FIELDS = (
    "description", "allowed_data_regions", *LIST_FIELDS, "content_filter_builtins", "content_filters",
    *BOOLEAN_FIELDS, "enforce_zdr", "limit_usd", "reset_interval",
)  # fmt: skip


def _apply(guardrail: Guardrail, data: dict) -> None:
    """Set the fields present in `data`; `enforce_zdr` fills every per-vendor field not sent explicitly."""
    for field in PLAIN_FIELDS:
        if field in data:
            value = data[field]
            if field in ("content_filter_builtins", "content_filters") and value is not None:
                value = [dict(entry) for entry in value]
            setattr(guardrail, field, value)
    if data.get("enforce_zdr") is not None:
        for field in ZDR_FIELDS:
            if field not in data:
                setattr(guardrail, field, data["enforce_zdr"])


def _workspace_for_create(organization: Organization, workspace_id: uuid.UUID | None) -> Workspace:
    if workspace_id is None:
        if organization.default_workspace_id is None:
            raise validation_error("workspace_id", "the default workspace was deleted; pass workspace_id")
        return organization.default_workspace
    workspace = Workspace.objects.filter(organization=organization, id=workspace_id).first()
    if workspace is None:
        raise validation_error("workspace_id", f"unknown workspace '{workspace_id}'")
    return workspace


@transaction.atomic
def guardrail_create(*, organization: Organization, data: dict) -> Guardrail:
    """Create a guardrail in `data["workspace_id"]` or the organization's default workspace."""
    workspace = _workspace_for_create(organization, data.get("workspace_id"))
    guardrail = Guardrail(organization=organization, workspace=workspace, name=data["name"])
    _apply(guardrail, data)
    guardrail.save()
    return guardrail


@transaction.atomic
def guardrail_update(*, guardrail: Guardrail, data: dict) -> Guardrail:
    """Change the fields present in `data`; the default guardrail's name follows its workspace (400)."""
    if "name" in data:
        if guardrail.is_default:
            raise validation_error("name", "the name of a workspace default guardrail follows its workspace")
        guardrail.name = data["name"]
    _apply(guardrail, data)
    guardrail.updated_at = timezone.now()
    guardrail.save()
    return guardrail


def default_guardrail_update(*, workspace: Workspace, data: dict) -> Guardrail:
    """PATCH of a workspace's default guardrail: materialized by its first PATCH (two concurrent first PATCHes:
    one creates it, the other then updates it)."""
    if "name" in data:
        raise validation_error("name", "the name of a workspace default guardrail follows its workspace")
    for _ in range(2):
        guardrail = Guardrail.objects.filter(workspace=workspace, is_default=True).first()
        if guardrail is not None:
            return guardrail_update(guardrail=guardrail, data=data)
        guardrail = Guardrail(
            id=workspace.default_guardrail_id,
            organization_id=workspace.organization_id,
            workspace=workspace,
            is_default=True,
            name=workspace.name,
        )
        _apply(guardrail, data)
        try:
            with transaction.atomic():
                guardrail.save(force_insert=True)
        except IntegrityError:
            continue
        return guardrail
    raise GatewayError(409, "The workspace default guardrail was changed concurrently; retry")


def guardrail_delete(*, guardrail: Guardrail) -> None:
    """Delete a guardrail and its assignments (a deleted default guardrail is gone until its next PATCH)."""
    guardrail.delete()


def _assignable(guardrail: Guardrail) -> None:
    if guardrail.is_default:
        raise GatewayError(
            400, "The workspace default guardrail applies to all traffic of its workspace and cannot be assigned"
        )


@transaction.atomic
def guardrail_assign_keys(*, guardrail: Guardrail, key_hashes: list[str], assigned_by_id=None) -> int:
    """Assign the guardrail to keys of its organization; a key's previous guardrail is replaced."""
    _assignable(guardrail)
    keys = organization_keys(organization_id=guardrail.organization_id, key_hashes=key_hashes, field="key_hashes")
    for key in keys:
        GuardrailKeyAssignment.objects.update_or_create(
            api_key=key, defaults={"guardrail": guardrail, "assigned_by_id": assigned_by_id}
        )
    return len(keys)


@transaction.atomic
def guardrail_unassign_keys(*, guardrail: Guardrail, key_hashes: list[str]) -> int:
    keys = organization_keys(organization_id=guardrail.organization_id, key_hashes=key_hashes, field="key_hashes")
    deleted, _ = GuardrailKeyAssignment.objects.filter(guardrail=guardrail, api_key__in=keys).delete()
    return deleted


@transaction.atomic
def guardrail_assign_members(*, guardrail: Guardrail, user_ids: list[str], assigned_by_id=None) -> int:
    """Assign the guardrail to members of its organization; a member's previous guardrail is replaced."""
    _assignable(guardrail)
    users = organization_users(organization_id=guardrail.organization_id, user_ids=user_ids, field="member_user_ids")
    for user in users:
        GuardrailMemberAssignment.objects.update_or_create(
            user=user, defaults={"guardrail": guardrail, "assigned_by_id": assigned_by_id}
        )
    return len(users)


@transaction.atomic
def guardrail_unassign_members(*, guardrail: Guardrail, user_ids: list[str]) -> int:
    users = organization_users(organization_id=guardrail.organization_id, user_ids=user_ids, field="member_user_ids")
    deleted, _ = GuardrailMemberAssignment.objects.filter(guardrail=guardrail, user__in=users).delete()
    return deleted
