"""Workspace memberships that follow the identity provider's groups through the group mappings.

`memberships_apply` recomputes, for (workspace, user) pairs, the role the mappings give a user (the highest
role of the mappings of the workspace whose group holds the user) and brings the workspace membership in
line: created or raised when a mapping wants it, and when none does any more, put back to the role it had
before a mapping reached it (`MembershipGrant.manual_role`) or removed when a mapping created it. A
membership no mapping ever touched is never changed. Callers run it inside their transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from accounts.models import WorkspaceMember
from scim.models import GroupMapping, MembershipGrant, ScimGroupMember, higher_role

Pair = tuple[uuid.UUID, uuid.UUID]


def pairs_for_group(group_id: uuid.UUID, user_ids: Iterable[uuid.UUID]) -> set[Pair]:
    """Every (workspace, user) pair that the mappings of a group reach for `user_ids`."""
    workspace_ids = list(GroupMapping.objects.filter(group_id=group_id).values_list("workspace_id", flat=True))
    return {(w, u) for w in workspace_ids for u in user_ids}


def pairs_for_user(user_id: uuid.UUID) -> set[Pair]:
    """Every (workspace, user) pair reached through the groups the user belongs to."""
    workspace_ids = GroupMapping.objects.filter(group__memberships__user_id=user_id).values_list(
        "workspace_id", flat=True
    )
    return {(w, user_id) for w in workspace_ids}


def group_member_ids(group_id: uuid.UUID) -> set[uuid.UUID]:
    return set(ScimGroupMember.objects.filter(group_id=group_id).values_list("user_id", flat=True))


def desired_role(workspace_id: uuid.UUID, user_id: uuid.UUID) -> str | None:
    """The highest role the mappings of a workspace give a user, or None."""
    roles = GroupMapping.objects.filter(workspace_id=workspace_id, group__memberships__user_id=user_id).values_list(
        "role", flat=True
    )
    return higher_role(*roles)


def _lock_membership(workspace_id: uuid.UUID, user_id: uuid.UUID) -> WorkspaceMember | None:
    return WorkspaceMember.objects.select_for_update().filter(workspace_id=workspace_id, user_id=user_id).first()


def _create_membership(workspace_id: uuid.UUID, user_id: uuid.UUID, role: str) -> WorkspaceMember | None:
    """Create a membership granted by the mappings; None when another transaction created one first."""
    try:
        with transaction.atomic():
            membership = WorkspaceMember.objects.create(workspace_id=workspace_id, user_id=user_id, role=role)
            MembershipGrant.objects.create(membership=membership, manual_role=None)
            return membership
    except IntegrityError:
        return None


def membership_apply(workspace_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """Bring one workspace membership in line with the mappings."""
    wanted = desired_role(workspace_id, user_id)
    membership = _lock_membership(workspace_id, user_id)
    if membership is None and wanted is not None:
        if _create_membership(workspace_id, user_id, wanted):
            return
        membership = _lock_membership(workspace_id, user_id)
    if membership is None:
        return
    grant = MembershipGrant.objects.filter(membership=membership).first()
    if wanted is None:
        if grant is None:
            return
        if grant.manual_role is None:
            membership.delete()
        else:
            membership.role = grant.manual_role
            membership.save(update_fields=["role", "updated_at"])
            grant.delete()
        return
    if grant is None:
        grant, _ = MembershipGrant.objects.get_or_create(
            membership=membership, defaults={"manual_role": membership.role}
        )
    role = higher_role(grant.manual_role, wanted)
    if membership.role != role:
        membership.role = role
        membership.save(update_fields=["role", "updated_at"])


def memberships_apply(pairs: Iterable[Pair]) -> None:
    """Apply the mappings to every (workspace, user) pair, in a stable order (no lock-order deadlocks)."""
    for workspace_id, user_id in sorted(set(pairs), key=lambda p: (str(p[0]), str(p[1]))):
        membership_apply(workspace_id, user_id)


def memberships_keep(mapping: GroupMapping) -> None:
    """Before a mapping is deleted with keep_members=true: the memberships it reaches keep their current role
    as their own (manual) role, so removing the mapping leaves them as they are."""
    members = group_member_ids(mapping.group_id)
    grants = MembershipGrant.objects.filter(
        membership__workspace_id=mapping.workspace_id, membership__user_id__in=members
    ).select_related("membership")
    for grant in grants:
        grant.manual_role = grant.membership.role
        grant.save(update_fields=["manual_role", "updated_at"])
