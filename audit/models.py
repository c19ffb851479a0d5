"""Models of the audit app."""

from __future__ import annotations

import uuid

from django.db import models


class Source(models.TextChoices):
    API = "api", "Management API"
    ADMIN = "admin", "Django admin"
    SCIM = "scim", "SCIM"
    DATA_PLANE = "data_plane", "Data plane"
    COMMAND = "command", "Management command"


class Action(models.TextChoices):
    CREATE = "create", "Created"
    UPDATE = "update", "Updated"
    DELETE = "delete", "Deleted"
    REFUSE = "refuse", "Refused a request"
    PURGE = "purge", "Purged"


class AuditEvent(models.Model):
    """One management change (or data-plane refusal): who, what, when, and the changed fields, secrets masked.

    `actor` is the calling key's hash (API, SCIM, data plane), the staff user's username (admin) or the operating
    system account that ran a management command (command).
    `changes` maps each changed field to `{"old": ..., "new": ...}`; a secret field shows `"***"` (or
    `"*** (changed)"`), never its value. A refusal's `changes` holds what was refused (status, message, model).

    Refusals are aggregated: one row per key, reason (`resource_type` and `resource_id`) and minute (`minute`),
    whose `count` is the number of requests refused so; `created_at`, `changes` and `request_id` are the first's.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    # No foreign key: the record of a change outlives what it changed (even a deleted organization).
    organization_id = models.UUIDField(null=True, blank=True, verbose_name="organization ID")
    created_at = models.DateTimeField(db_index=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    actor_type = models.CharField(max_length=16, help_text="api_key or user")
    actor = models.CharField(max_length=150, help_text="Key hash or username")
    actor_name = models.CharField(max_length=255, blank=True, default="", help_text="Key name or user's full name")
    resource_type = models.CharField(max_length=64, help_text="e.g. guardrail, api_key, workspace_budget")
    resource_id = models.CharField(max_length=255, blank=True, default="", verbose_name="resource ID")
    resource_label = models.CharField(max_length=255, blank=True, default="")
    action = models.CharField(max_length=16, choices=Action.choices)
    changes = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(
        max_length=64, blank=True, default="", verbose_name="request ID"
    )  # X-Request-Id of a refused request
    count = models.PositiveIntegerField(default=1, help_text="Requests this record stands for (refusals)")
    minute = models.DateTimeField(null=True, blank=True, help_text="A refusal's minute (its aggregation bucket)")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization_id", "-created_at"], name="audit_org_time"),
            models.Index(fields=["organization_id", "resource_type", "resource_id"], name="audit_org_resource"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization_id", "actor", "resource_type", "resource_id", "minute"],
                condition=models.Q(action="refuse"),
                name="audit_refusal_per_minute",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.resource_type} {self.resource_id}"
