"""Organizations, their users, workspaces and API keys."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.core.validators import MinValueValidator
from django.db import models

DEFAULT_GUARDRAIL_NAMESPACE = uuid.UUID("6f1c2a7e-3b0d-4c55-9d55-0b9a2f1e6a10")


def default_guardrail_id_for(workspace_id: uuid.UUID) -> uuid.UUID:
    """The id of a workspace's default guardrail, derived deterministically from the workspace id."""
    return uuid.uuid5(DEFAULT_GUARDRAIL_NAMESPACE, str(workspace_id))


class RateLimitedModel(models.Model):
    """Per-minute request and token limits (null: unlimited), enforced by ratelimits.middleware."""

    requests_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Requests admitted per minute (sliding window); empty: unlimited.",
    )
    tokens_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Tokens (worst-case estimate held, then actual usage) per minute; empty: unlimited.",
    )

    class Meta:
        abstract = True


def rate_limit_constraints(prefix: str) -> list[models.CheckConstraint]:
    """Named constraints: both per-minute limits are null or at least 1."""
    return [
        models.CheckConstraint(
            condition=models.Q(requests_per_minute__isnull=True) | models.Q(requests_per_minute__gte=1),
            name=f"{prefix}_requests_per_minute_positive",
        ),
        models.CheckConstraint(
            condition=models.Q(tokens_per_minute__isnull=True) | models.Q(tokens_per_minute__gte=1),
            name=f"{prefix}_tokens_per_minute_positive",
        ),
    ]


class TimestampedModel(models.Model):
    """UUID primary key plus creation and update times."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Organization(TimestampedModel):
    """An account: owns workspaces, members (users) and API keys. Everything a key sees is scoped to it."""

    name = models.CharField(max_length=200)
    default_workspace = models.ForeignKey(
        "accounts.Workspace", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.name


class OrgRole(models.TextChoices):
    ADMIN = "org:admin", "Organization admin"
    MEMBER = "org:member", "Organization member"


class User(AbstractUser):
    """A person: Django's user model with a UUID id, an organization and an organization role."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.CASCADE, related_name="members"
    )
    org_role = models.CharField(max_length=20, choices=OrgRole.choices, default=OrgRole.MEMBER)

    class Meta:
        ordering = ["date_joined"]


class Workspace(RateLimitedModel, TimestampedModel):
    """A unit of an organization that owns keys, guardrails, presets, destinations and budgets."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="workspaces")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    description = models.TextField(null=True, blank=True)
    include_byok_in_budgets = models.BooleanField(default=False, verbose_name="include BYOK in budgets")
    created_by = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The user behind the management key that created the workspace (the key's creator), if any",
    )
    is_observability_broadcast_enabled = models.BooleanField(
        default=True, help_text="Off: no trace of this workspace's generations goes to any destination"
    )
    is_observability_io_logging_enabled = models.BooleanField(
        default=True, help_text="Off: destinations get traces without input and output (as with privacy mode)"
    )
    io_logging_sampling_rate = models.FloatField(
        default=1.0, help_text="Share of generations (0.0001..1) whose input and output destinations receive"
    )
    response_cache_enabled = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Cache the answers of this workspace's requests unless a request sends X-Service-Cache: disabled",
    )

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "slug"], name="workspace_slug_unique_per_org"),
            models.CheckConstraint(
                condition=models.Q(io_logging_sampling_rate__gte=0.0001) & models.Q(io_logging_sampling_rate__lte=1),
                name="workspace_io_logging_sampling_rate_range",
            ),
            *rate_limit_constraints("workspace"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    @property
    def default_guardrail_id(self) -> uuid.UUID:
        return default_guardrail_id_for(self.id)


class WorkspaceRole(models.TextChoices):
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


class WorkspaceMember(models.Model):
    """A user's membership of a workspace, with a role."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="workspace_memberships")
    role = models.CharField(max_length=10, choices=WorkspaceRole.choices, default=WorkspaceRole.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="workspace_member_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class LimitReset(models.TextChoices):
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"
    MONTHLY = "monthly", "Monthly"


class ApiKey(RateLimitedModel, TimestampedModel):
    """An API key. Only the SHA-256 of the raw key (`hash`, its public id) is stored."""

    hash = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    label = models.CharField(max_length=64)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    creator = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_keys")
    is_management = models.BooleanField(default=False)
    disabled = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    limit = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    limit_reset = models.CharField(max_length=10, choices=LimitReset.choices, null=True, blank=True)
    include_byok_in_limit = models.BooleanField(default=False, verbose_name="include BYOK in limit")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        verbose_name_plural = "API keys"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(limit__isnull=True) | models.Q(limit__gte=0), name="api_key_limit_not_negative"
            ),
            *rate_limit_constraints("api_key"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.label})"


class PolicyVersion(models.Model):
    """A single counter bumped whenever data the data plane caches (keys, policies, prices) changes.

    Used by gateway_project.policy_cache when no Redis is configured; with Redis the counter lives there.
    """

    name = models.CharField(max_length=50, primary_key=True)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name}={self.version}"
