"""Reads of the scim app: mappings and groups for the management API, and SCIM queries."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Prefetch, QuerySet
from scim2_models import InvalidFilterException, ScimFilter

from scim.models import GroupMapping, ScimGroup, ScimGroupMember, ScimUser
from scim.protocol.filters import GROUP_COLUMNS, USER_COLUMNS, Untranslatable, filter_query
from scim.protocol.resources import GroupResource, UserResource, group_resource, user_resource


def group_mappings(*, organization_id: uuid.UUID) -> QuerySet[GroupMapping]:
    return GroupMapping.objects.filter(organization_id=organization_id)


def scim_groups(*, organization_id: uuid.UUID) -> QuerySet[ScimGroup]:
    """Groups with their member and mapping counts."""
    return ScimGroup.objects.filter(organization_id=organization_id).annotate(
        member_count=Count("memberships", distinct=True), mapping_count=Count("mappings", distinct=True)
    )


def scim_users_queryset(organization_id: uuid.UUID) -> QuerySet[ScimUser]:
    groups = Prefetch("group_memberships", queryset=ScimGroupMember.objects.select_related("group"))
    return ScimUser.objects.filter(organization_id=organization_id).select_related("user").prefetch_related(groups)


def scim_groups_queryset(organization_id: uuid.UUID) -> QuerySet[ScimGroup]:
    members = Prefetch("memberships", queryset=ScimGroupMember.objects.select_related("user"))
    return ScimGroup.objects.filter(organization_id=organization_id).prefetch_related(members)


@dataclass(frozen=True)
class Kind:
    """What differs between Users and Groups for a query."""

    name: str
    model: type
    columns: dict
    queryset: Callable[[uuid.UUID], QuerySet]  # organization id -> its rows
    to_resource: Callable[[Any, str], Any]  # (row, base url) -> scim2-models resource


def _group_without_members(group: ScimGroup, base_url: str) -> GroupResource:
    return group_resource(group, base_url, with_members=False)


def _groups_without_members(organization_id: uuid.UUID) -> QuerySet[ScimGroup]:
    return ScimGroup.objects.filter(organization_id=organization_id)


USERS = Kind("User", UserResource, USER_COLUMNS, scim_users_queryset, user_resource)
GROUPS = Kind("Group", GroupResource, GROUP_COLUMNS, scim_groups_queryset, group_resource)
# Groups read without their member lists, for responses that do not return members (`excludedAttributes=members`,
# as Microsoft Entra ID asks): a lookup of a 10,000-member group does not load 10,000 rows.
GROUPS_WITHOUT_MEMBERS = Kind("Group", GroupResource, GROUP_COLUMNS, _groups_without_members, _group_without_members)
FULL_KINDS = {"User": USERS, "Group": GROUPS}


@dataclass(frozen=True)
class Page:
    total: int
    resources: list


def scim_query(
    *, kind: Kind, organization_id: uuid.UUID, filter: str | None, start_index: int, count: int, base_url: str
) -> Page:
    """A page of resources matching a SCIM filter (`start_index` is 1-based).

    Filters on columns run in the database; any other attribute is matched by scim2-models on the
    organization's resources.
    """
    queryset = kind.queryset(organization_id)
    if not filter:
        return _page(queryset, kind, start_index, count, base_url)
    bound = ScimFilter[kind.model](filter)  # InvalidFilterException on bad syntax or unknown attributes
    try:
        condition = filter_query(bound.ast, kind.columns)
    except Untranslatable:
        full = FULL_KINDS[kind.name]  # matching may read any attribute, members included
        rows = full.queryset(organization_id)
        matched = [r for r in (full.to_resource(row, base_url) for row in rows) if bound.match(r)]
        return Page(total=len(matched), resources=matched[start_index - 1 : start_index - 1 + count])
    except (TypeError, ValueError) as exc:
        raise InvalidFilterException(detail=str(exc)) from exc
    return _page(queryset.filter(condition).distinct(), kind, start_index, count, base_url)


def _page(queryset: QuerySet, kind: Kind, start_index: int, count: int, base_url: str) -> Page:
    total = queryset.count()
    rows = list(queryset[start_index - 1 : start_index - 1 + count]) if count else []
    return Page(total=total, resources=[kind.to_resource(row, base_url) for row in rows])
