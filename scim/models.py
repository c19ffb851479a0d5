"""Models of the scim app: what the identity provider pushed (users, groups, memberships), the
group-to-workspace role mappings, and which workspace memberships the mappings granted."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models.functions import Lower
from scim2_models import InvalidValueException

from accounts.models import Organization, User, Workspace, WorkspaceMember, WorkspaceRole

ROLE_RANK = {WorkspaceRole.MEMBER: 1, WorkspaceRole.ADMIN: 2}
COLUMN_LENGTH = 255  # the full values stay in `attributes`; the columns serve filters


def clip(value: str | None) -> str | None:
    """A value for a text column (display names and e-mails longer than the column are cut)."""
    return value[:COLUMN_LENGTH] if value else value


def check_identifier_lengths(**identifiers: str | None) -> None:
    """Identifiers are never cut: longer than the column is an invalidValue."""
    for name, value in identifiers.items():
        if value and len(value) > COLUMN_LENGTH:
            raise InvalidValueException(detail=f"{name}: at most {COLUMN_LENGTH} characters")


def higher_role(*roles: str | None) -> str | None:
    """The highest of `roles` (admin > member); None when none is given."""
    present = [r for r in roles if r]
    return max(present, key=lambda r: ROLE_RANK[r]) if present else None


class ScimUser(models.Model):
    """The SCIM side of an organization member pushed by the identity provider.

    The SCIM `id` is the id of the `accounts.User` it provisions. `attributes` holds the SCIM resource as the
    provider last wrote it (without `id` and `meta`); the columns repeat what filters and the gateway need.
    """

    user = models.OneToOneField(User, primary_key=True, on_delete=models.CASCADE, related_name="scim")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_users")
    user_name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, null=True, blank=True, verbose_name="external ID")
    display_name = models.CharField(max_length=255, null=True, blank=True)
    email = models.CharField(max_length=255, null=True, blank=True)
    active = models.BooleanField(default=True)
    disabled_key_ids = models.JSONField(default=list, blank=True, help_text="API keys disabled by deactivation")
    attributes = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM user"
        verbose_name_plural = "SCIM users"
        ordering = ["created_at", "user_id"]
        constraints = [
            # userName is case-insensitive and unique within a service provider (RFC 7643 §4.1.1).
            models.UniqueConstraint(Lower("user_name"), "organization", name="scim_user_name_unique_per_org"),
        ]

    def __str__(self) -> str:
        return self.user_name


class ScimGroup(models.Model):
    """A group pushed by the identity provider. Its members are `ScimGroupMember` rows."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_groups")
    display_name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, null=True, blank=True, verbose_name="external ID")
    attributes = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group"
        verbose_name_plural = "SCIM groups"
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.display_name


class ScimGroupMember(models.Model):
    """A user's membership of a SCIM group."""

    group = models.ForeignKey(ScimGroup, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(ScimUser, on_delete=models.CASCADE, related_name="group_memberships")
    display = models.CharField(max_length=255, null=True, blank=True, help_text="`display` as the provider sent it")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "SCIM group member"
        verbose_name_plural = "SCIM group members"
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="scim_group_member_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.group_id}"


class GroupMapping(models.Model):
    """Members of `group` are members of `workspace` with `role`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_group_mappings")
    group = models.ForeignKey(ScimGroup, on_delete=models.CASCADE, related_name="mappings")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="scim_group_mappings")
    role = models.CharField(max_length=10, choices=WorkspaceRole.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group mapping"
        verbose_name_plural = "SCIM group mappings"
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "workspace"], name="scim_group_mapping_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.group} -> {self.workspace} ({self.role})"


class MembershipGrant(models.Model):
    """Marks a workspace membership as held by SCIM group mappings.

    `manual_role` is the role the membership had before a mapping reached it (null when a mapping created
    it): when no mapping holds the user any more, the membership goes back to that role, or is removed.
    """

    membership = models.OneToOneField(WorkspaceMember, primary_key=True, on_delete=models.CASCADE, related_name="+")
    manual_role = models.CharField(max_length=10, choices=WorkspaceRole.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM membership grant"
        verbose_name_plural = "SCIM membership grants"
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"grant of {self.membership_id}"
