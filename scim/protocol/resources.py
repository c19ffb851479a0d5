"""SCIM resources (scim2-models) from and to the scim app's rows.

A row keeps the resource as the identity provider wrote it (`attributes`, without the read-only `id`,
`meta`, `groups`/`members` and the write-only `password`); `id`, `meta`, the user's `groups` and the
group's `members` are added from the database when a resource is read.
"""

from __future__ import annotations

from typing import Any

from scim2_models import Context, EnterpriseUser, Group, User

from scim.models import ScimGroup, ScimUser

UserResource = User[EnterpriseUser]
GroupResource = Group

NOT_STORED = ("id", "meta", "groups", "members", "password")


def stored_attributes(resource: UserResource | GroupResource) -> dict[str, Any]:
    """What a row keeps of a resource."""
    data = resource.model_dump(scim_ctx=Context.DEFAULT)
    for name in NOT_STORED:
        data.pop(name, None)
    return data


def _meta(kind: str, row, location: str) -> dict[str, Any]:
    return {
        "resourceType": kind,
        "created": row.created_at.isoformat(),
        "lastModified": row.updated_at.isoformat(),
        "location": location,
    }


def user_resource(scim_user: ScimUser, base_url: str) -> UserResource:
    """The SCIM User of a row (its groups read through `group_memberships`, prefetch them for lists)."""
    user_id = str(scim_user.user_id)
    data = dict(scim_user.attributes)
    data["id"] = user_id
    data["meta"] = _meta("User", scim_user, f"{base_url}/Users/{user_id}")
    groups = [m.group for m in scim_user.group_memberships.all()]
    if groups:
        data["groups"] = [
            {"value": str(g.id), "display": g.display_name, "$ref": f"{base_url}/Groups/{g.id}", "type": "direct"}
            for g in groups
        ]
    return UserResource.model_validate(data)


def group_resource(
    group: ScimGroup, base_url: str, *, with_members: bool = True, display_fallback: bool = True
) -> GroupResource:
    """The SCIM Group of a row (its members read through `memberships`, prefetch them for lists).

    `with_members=False` leaves the members out, for responses that do not return them. A member's `display`
    is the one the provider sent, else (with `display_fallback`, for responses) the user's display name."""
    data = dict(group.attributes)
    data["id"] = str(group.id)
    data["meta"] = _meta("Group", group, f"{base_url}/Groups/{group.id}")
    members = list(group.memberships.all()) if with_members else []
    if members:
        data["members"] = [
            {
                "value": str(m.user_id),
                "display": m.display or ((m.user.display_name or m.user.user_name) if display_fallback else None),
                "$ref": f"{base_url}/Users/{m.user_id}",
                "type": "User",
            }
            for m in members
        ]
    return GroupResource.model_validate(data)


def primary_email(resource: UserResource) -> str | None:
    emails = resource.emails or []
    chosen = next((e for e in emails if e.primary), emails[0] if emails else None)
    return str(chosen.value) if chosen and chosen.value else None
