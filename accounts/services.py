"""Writes of the accounts app: organizations, workspaces, members and API keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from accounts.keys import generate_raw_key, hash_key, mask_key
from accounts.models import ApiKey, Organization, OrgRole, User, Workspace, WorkspaceMember, WorkspaceRole
from accounts.selectors import organization_users
from gateway_project.api.errors import GatewayError, validation_error

RATE_LIMIT_FIELDS = ("requests_per_minute", "tokens_per_minute")


@dataclass(frozen=True)
class CreatedKey:
    """A key just created, with its raw value (shown once)."""

    api_key: ApiKey
    raw_key: str


@transaction.atomic
def organization_create(*, name: str, workspace_name: str = "Default", workspace_slug: str = "default") -> Organization:
    """Create an organization with its default workspace."""
    organization = Organization.objects.create(name=name)
    workspace = Workspace.objects.create(organization=organization, name=workspace_name, slug=workspace_slug)
    organization.default_workspace = workspace
    organization.save(update_fields=["default_workspace", "updated_at"])
    return organization


def user_create(
    *,
    organization: Organization,
    username: str,
    email: str = "",
    org_role: str = OrgRole.MEMBER,
    password: str | None = None,
    is_staff: bool = False,
    is_superuser: bool = False,
) -> User:
    """Create a member of an organization."""
    user = User(
        username=username,
        email=email,
        organization=organization,
        org_role=org_role,
        is_staff=is_staff,
        is_superuser=is_superuser,
    )
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    return user


def _unique_slug(organization: Organization, base: str) -> str:
    base = slugify(base)[:90] or "workspace"
    slug, n = base, 1
    while Workspace.objects.filter(organization=organization, slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


# Workspace switches: those observability honours (observability.selectors reads them with the destinations) and
# the response cache's default (responsecache/policy.py reads it from the key's principal).
WORKSPACE_SETTING_FIELDS = (
    "is_observability_broadcast_enabled",
    "is_observability_io_logging_enabled",
    "io_logging_sampling_rate",
    "response_cache_enabled",
)


def workspace_create(
    *,
    organization: Organization,
    name: str,
    slug: str | None = None,
    description: str | None = None,
    requests_per_minute: int | None = None,
    tokens_per_minute: int | None = None,
    created_by: User | None = None,
    settings: dict | None = None,
) -> Workspace:
    """Create a workspace; without `slug` one is derived from the name. A taken slug → 409.

    `settings` holds the switches (WORKSPACE_SETTING_FIELDS) the body sent.
    """
    if slug is None:
        slug = _unique_slug(organization, name)
    elif Workspace.objects.filter(organization=organization, slug=slug).exists():
        raise GatewayError(409, f"slug: a workspace with slug '{slug}' already exists")
    try:
        with transaction.atomic():
            return Workspace.objects.create(
                organization=organization,
                name=name,
                slug=slug,
                description=description,
                requests_per_minute=requests_per_minute,
                tokens_per_minute=tokens_per_minute,
                created_by=created_by,
                **{k: v for k, v in (settings or {}).items() if k in WORKSPACE_SETTING_FIELDS},
            )
    except IntegrityError as exc:
        raise GatewayError(409, f"slug: a workspace with slug '{slug}' already exists") from exc


def workspace_update(*, workspace: Workspace, data: dict) -> Workspace:
    """Change the fields present in `data` (name, slug, description, per-minute rate limits, settings)."""
    slug = data.get("slug")
    if slug is not None and slug != workspace.slug:
        if Workspace.objects.filter(organization_id=workspace.organization_id, slug=slug).exists():
            raise GatewayError(409, f"slug: a workspace with slug '{slug}' already exists")
    for field in ("name", "slug", "description", *RATE_LIMIT_FIELDS, *WORKSPACE_SETTING_FIELDS):
        if field in data:
            setattr(workspace, field, data[field])
    workspace.save()
    return workspace


@transaction.atomic
def workspace_delete(*, workspace: Workspace) -> None:
    """Delete a workspace and everything it owns. The organization's default workspace cannot be deleted."""
    organization = Organization.objects.select_for_update().get(pk=workspace.organization_id)
    if organization.default_workspace_id == workspace.id:
        raise GatewayError(400, "The default workspace cannot be deleted")
    workspace.delete()


@transaction.atomic
def workspace_members_add(
    *, workspace: Workspace, user_ids: list, role: str = WorkspaceRole.MEMBER
) -> list[WorkspaceMember]:
    """Add users of the organization to a workspace (or change their role). Returns the memberships assigned."""
    users = organization_users(organization_id=workspace.organization_id, user_ids=user_ids, field="user_ids")
    return [
        WorkspaceMember.objects.update_or_create(workspace=workspace, user=user, defaults={"role": role})[0]
        for user in users
    ]


@transaction.atomic
def workspace_members_remove(*, workspace: Workspace, user_ids: list) -> int:
    """Remove users from a workspace. Returns how many memberships were removed."""
    users = organization_users(organization_id=workspace.organization_id, user_ids=user_ids, field="user_ids")
    deleted, _ = WorkspaceMember.objects.filter(workspace=workspace, user__in=users).delete()
    return deleted


def api_key_create(
    *,
    organization: Organization,
    name: str,
    workspace: Workspace | None = None,
    creator: User | None = None,
    is_management: bool = False,
    limit: Decimal | None = None,
    limit_reset: str | None = None,
    include_byok_in_limit: bool = False,
    expires_at: datetime | None = None,
    disabled: bool = False,
    requests_per_minute: int | None = None,
    tokens_per_minute: int | None = None,
) -> CreatedKey:
    """Create a key; the raw key is returned once and only its hash is stored."""
    workspace = workspace or organization.default_workspace
    if workspace is None:
        raise validation_error("workspace_id", "the organization has no default workspace; pass workspace_id")
    raw_key = generate_raw_key()
    api_key = ApiKey.objects.create(
        hash=hash_key(raw_key),
        name=name,
        label=mask_key(raw_key),
        organization=organization,
        workspace=workspace,
        creator=creator,
        is_management=is_management,
        limit=limit,
        limit_reset=limit_reset,
        include_byok_in_limit=include_byok_in_limit,
        expires_at=expires_at,
        disabled=disabled,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
    )
    return CreatedKey(api_key=api_key, raw_key=raw_key)


def api_key_update(*, api_key: ApiKey, data: dict) -> ApiKey:
    """Change the fields present in `data`."""
    fields = ("name", "disabled", "limit", "limit_reset", "include_byok_in_limit", "expires_at", *RATE_LIMIT_FIELDS)
    for field in fields:
        if field in data:
            setattr(api_key, field, data[field])
    api_key.save()
    return api_key
