"""Writes of SCIM groups. A change of a group's members re-applies its mappings in the same transaction."""

from __future__ import annotations

import uuid

from django.db import transaction
from scim2_models import InvalidValueException, PatchOp

from scim.models import ScimGroup, ScimGroupMember, ScimUser, check_identifier_lengths, clip
from scim.protocol.patches import member_operations
from scim.protocol.resources import GroupResource, group_resource, stored_attributes
from scim.services.membership import group_member_ids, memberships_apply, pairs_for_group


def _members(organization_id: uuid.UUID, resource: GroupResource) -> dict[uuid.UUID, str | None]:
    """The users a resource names as members (→ their `display`); each must be a SCIM user of the organization."""
    wanted: dict[uuid.UUID, str] = {}
    displays: dict[uuid.UUID, str | None] = {}
    for member in resource.members or []:
        try:
            key = uuid.UUID(str(member.value))
            wanted[key] = str(member.value)
            displays[key] = member.display[:255] if member.display else None
        except ValueError:
            raise InvalidValueException(detail=f"members: '{member.value}' is not a user of this service") from None
    found = set(
        ScimUser.objects.filter(organization_id=organization_id, user_id__in=list(wanted)).values_list(
            "user_id", flat=True
        )
    )
    missing = [raw for key, raw in wanted.items() if key not in found]
    if missing:
        raise InvalidValueException(detail=f"members: '{missing[0]}' is not a user of this service")
    return displays


def _set_members(group: ScimGroup, wanted: dict[uuid.UUID, str | None]) -> None:
    current = {m.user_id: m for m in ScimGroupMember.objects.filter(group=group)}
    removed, added = set(current) - set(wanted), set(wanted) - set(current)
    if removed:
        ScimGroupMember.objects.filter(group=group, user_id__in=removed).delete()
    ScimGroupMember.objects.bulk_create(
        [ScimGroupMember(group=group, user_id=u, display=wanted[u]) for u in sorted(added, key=str)]
    )
    changed = [m for u, m in current.items() if u in wanted and wanted[u] and m.display != wanted[u]]
    for member in changed:
        member.display = wanted[member.user_id]
    ScimGroupMember.objects.bulk_update(changed, ["display"])
    memberships_apply(pairs_for_group(group.id, removed | added))


def _write(group: ScimGroup, resource: GroupResource) -> ScimGroup:
    check_identifier_lengths(externalId=resource.external_id)
    members = _members(group.organization_id, resource)
    group.display_name = clip(resource.display_name)
    group.external_id = resource.external_id
    group.attributes = stored_attributes(resource)
    group.save()
    _set_members(group, members)
    return group


@transaction.atomic
def scim_group_create(*, organization_id: uuid.UUID, resource: GroupResource) -> ScimGroup:
    """POST /Groups."""
    return _write(ScimGroup(organization_id=organization_id), resource)


def _locked(group: ScimGroup) -> ScimGroup:
    return ScimGroup.objects.select_for_update().get(pk=group.pk)


@transaction.atomic
def scim_group_replace(*, group: ScimGroup, resource: GroupResource, base_url: str) -> ScimGroup:
    """PUT /Groups/{id}: attributes and members replaced as a whole."""
    group = _locked(group)
    resource.replace(group_resource(group, base_url, display_fallback=False))
    return _write(group, resource)


@transaction.atomic
def scim_group_patch(*, group: ScimGroup, patch: PatchOp, base_url: str) -> ScimGroup:
    """PATCH /Groups/{id}: add/remove/replace operations (members included) applied by scim2-models.

    A patch that only adds, removes or replaces members (what identity providers send on every membership
    change) is applied to the membership rows directly, without rebuilding the whole member list.
    """
    group = _locked(group)
    member_ops = member_operations(patch)
    if member_ops is not None:
        current = {m.user_id: m.display for m in ScimGroupMember.objects.filter(group=group)}
        _set_members(group, _apply_member_ops(group.organization_id, current, member_ops))
        group.save(update_fields=["updated_at"])
        return group
    resource = group_resource(group, base_url, display_fallback=False)
    patch.patch(resource)
    return _write(group, resource)


def _apply_member_ops(organization_id: uuid.UUID, current: dict, member_ops: list) -> dict:
    wanted = dict(current)
    for verb, values in member_ops:
        if verb in ("add", "replace"):
            members = _members(organization_id, GroupResource(display_name="-", members=values))
            wanted = {**(wanted if verb == "add" else {}), **members}
            continue
        if values is None:  # remove every member
            wanted = {}
            continue
        for value in values:
            try:
                wanted.pop(uuid.UUID(str(value.get("value"))), None)
            except ValueError:
                continue
    return wanted


@transaction.atomic
def scim_group_delete(*, group: ScimGroup) -> None:
    """DELETE /Groups/{id}: the group, its mappings, and the workspace memberships they gave."""
    group = _locked(group)
    pairs = pairs_for_group(group.id, group_member_ids(group.id))
    group.delete()
    memberships_apply(pairs)
