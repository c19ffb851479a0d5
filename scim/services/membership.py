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
from django.utils import timezone

from accounts.models import WorkspaceMember
from gateway_project.api.errors import GatewayError
from gateway_project.policy_cache import bump_policy_version_on_commit
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


def _desired_roles(pairs: set[Pair]) -> dict[Pair, str]:
    """The highest role the mappings give each pair (pairs no mapping reaches are absent). One query."""
    rows = GroupMapping.objects.filter(
        workspace_id__in={w for w, _ in pairs}, group__memberships__user_id__in={u for _, u in pairs}
    ).values_list("workspace_id", "group__memberships__user_id", "role")
    desired: dict[Pair, str] = {}
    for workspace_id, user_id, role in rows:
        if (workspace_id, user_id) in pairs:
            desired[(workspace_id, user_id)] = higher_role(desired.get((workspace_id, user_id)), role)
    return desired


def _locked_memberships(pairs: set[Pair]) -> dict[Pair, WorkspaceMember]:
    """The existing memberships of the pairs, locked (in primary-key order, so no lock-order deadlock)."""
    rows = (
        WorkspaceMember.objects.select_for_update()
        .filter(workspace_id__in={w for w, _ in pairs}, user_id__in={u for _, u in pairs})
        .order_by("pk")
    )
    return {(m.workspace_id, m.user_id): m for m in rows if (m.workspace_id, m.user_id) in pairs}


def _create_granted(missing: dict[Pair, str]) -> bool:
    """Create the memberships mappings grant and their grants; False when another transaction raced us."""
    try:
        with transaction.atomic():
            created = WorkspaceMember.objects.bulk_create(
                [WorkspaceMember(workspace_id=w, user_id=u, role=role) for (w, u), role in missing.items()]
            )
            if any(m.pk is None for m in created):  # backends that do not return ids on bulk insert
                created = list(_locked_memberships(set(missing)).values())
            MembershipGrant.objects.bulk_create([MembershipGrant(membership=m, manual_role=None) for m in created])
        return True
    except IntegrityError:
        return False


def memberships_apply(pairs: Iterable[Pair]) -> None:
    """Bring the workspace memberships of (workspace, user) pairs in line with the mappings.

    A constant number of queries whatever the number of pairs, inside the caller's transaction. The data
    plane's cached policy is invalidated once, on commit.
    """
    pairs = set(pairs)
    if not pairs:
        return
    desired = _desired_roles(pairs)
    memberships = _locked_memberships(pairs)
    missing = {pair: role for pair, role in desired.items() if pair not in memberships}
    if missing and not _create_granted(missing):
        memberships = _locked_memberships(pairs)  # created concurrently: treat them as existing ones
        missing = {pair: role for pair, role in desired.items() if pair not in memberships}
        if missing and not _create_granted(missing):
            raise GatewayError(409, "Workspace memberships changed concurrently; retry the request")
    grants = {g.membership_id: g for g in MembershipGrant.objects.filter(membership__in=list(memberships.values()))}
    changed, removed, new_grants, dropped_grants = [], [], [], []
    now = timezone.now()
    for pair, membership in memberships.items():
        grant, wanted = grants.get(membership.pk), desired.get(pair)
        if wanted is None:
            if grant is None:
                continue  # a manual membership no mapping ever touched
            if grant.manual_role is None:
                removed.append(membership.pk)
                continue
            role = grant.manual_role
            dropped_grants.append(membership.pk)
        else:
            if grant is None:
                new_grants.append(MembershipGrant(membership=membership, manual_role=membership.role))
            role = higher_role(grant.manual_role if grant else membership.role, wanted)
        if membership.role != role:
            membership.role, membership.updated_at = role, now
            changed.append(membership)
    MembershipGrant.objects.filter(membership_id__in=dropped_grants).delete()
    MembershipGrant.objects.bulk_create(new_grants)
    WorkspaceMember.objects.filter(pk__in=removed).delete()
    WorkspaceMember.objects.bulk_update(changed, ["role", "updated_at"], batch_size=500)
    if missing or changed or removed:
        bump_policy_version_on_commit()


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
