"""Writes of SCIM group mappings (group → workspace with a role)."""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction

from accounts.models import Workspace
from gateway_project.api.errors import GatewayError
from scim.models import GroupMapping, ScimGroup
from scim.services.membership import group_member_ids, memberships_apply, memberships_keep, pairs_for_group


def _reapply(mapping: GroupMapping) -> None:
    memberships_apply(pairs_for_group(mapping.group_id, group_member_ids(mapping.group_id)))


@transaction.atomic
def group_mapping_create(
    *, organization_id: uuid.UUID, scim_group_id: uuid.UUID, workspace_id: uuid.UUID, role: str
) -> GroupMapping:
    """Map a group to a workspace, and apply it to the group's members.

    The same mapping with the same role succeeds and re-applies it; another role for it is a 409.
    """
    group = ScimGroup.objects.filter(organization_id=organization_id, id=scim_group_id).first()
    if group is None:
        raise GatewayError(404, "scim_group_id: SCIM group not found")
    workspace = Workspace.objects.filter(organization_id=organization_id, id=workspace_id).first()
    if workspace is None:
        raise GatewayError(404, "workspace_id: workspace not found")
    mapping = GroupMapping.objects.select_for_update().filter(group=group, workspace=workspace).first()
    if mapping is None:
        try:
            with transaction.atomic():
                mapping = GroupMapping.objects.create(
                    organization_id=organization_id, group=group, workspace=workspace, role=role
                )
        except IntegrityError:  # created concurrently
            mapping = GroupMapping.objects.select_for_update().get(group=group, workspace=workspace)
    if mapping.role != role:
        raise GatewayError(
            409,
            f"role: this group is already mapped to this workspace with role '{mapping.role}'",
            metadata={"field": "role", "id": str(mapping.id), "role": mapping.role},
        )
    _reapply(mapping)
    return mapping


@transaction.atomic
def group_mapping_update(*, mapping: GroupMapping, role: str) -> GroupMapping:
    """Change a mapping's role and apply it to the group's members."""
    mapping = GroupMapping.objects.select_for_update().get(pk=mapping.pk)
    if mapping.role != role:
        mapping.role = role
        mapping.save(update_fields=["role", "updated_at"])
    _reapply(mapping)
    return mapping


@transaction.atomic
def group_mapping_delete(*, mapping: GroupMapping, keep_members: bool) -> None:
    """Delete a mapping. keep_members=false removes the workspace memberships it granted (unless another
    mapping or a manual membership holds them); keep_members=true leaves every membership as it is."""
    mapping = GroupMapping.objects.select_for_update().get(pk=mapping.pk)
    pairs = pairs_for_group(mapping.group_id, group_member_ids(mapping.group_id))
    if keep_members:
        memberships_keep(mapping)
    mapping.delete()
    memberships_apply(pairs)
