"""Models of the presets app: a named, versioned request configuration of an organization."""

from __future__ import annotations

import uuid

from django.db import models


class PresetStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DISABLED = "disabled", "Disabled"
    ARCHIVED = "archived", "Archived"


class PresetFormat(models.TextChoices):
    """The request format a version was created from (decides how its `config` maps onto a request)."""

    RESPONSES = "responses", "Responses"
    MESSAGES = "messages", "Messages"
    CHAT = "chat", "Chat Completions"


class Preset(models.Model):
    """A request configuration addressed by its slug (unique per organization); each POST adds a version.

    `designated_version` is the version applied when a request names `@preset/<slug>`: the newest one.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="presets")
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="presets")
    slug = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=PresetStatus.choices, default=PresetStatus.ACTIVE)
    status_updated_at = models.DateTimeField(null=True, blank=True)
    creator_user_id = models.CharField(max_length=64, verbose_name="creator user ID")
    designated_version = models.ForeignKey(
        "presets.PresetVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "slug"], name="preset_slug_unique_per_org"),
        ]
        indexes = [models.Index(fields=["organization", "-updated_at"], name="preset_org_updated_idx")]

    def __str__(self) -> str:
        return self.slug


class PresetVersion(models.Model):
    """One immutable version of a preset: the persisted request fields and the system prompt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    preset = models.ForeignKey(Preset, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    format = models.CharField(max_length=10, choices=PresetFormat.choices, default=PresetFormat.RESPONSES)
    config = models.JSONField(default=dict, blank=True)
    system_prompt = models.TextField(blank=True, default="")
    creator_id = models.CharField(max_length=64, verbose_name="creator ID")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["preset", "version"]
        constraints = [
            models.UniqueConstraint(fields=["preset", "version"], name="preset_version_unique"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="preset_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.preset.slug} v{self.version}"
