"""Guardrails: policies on models, providers, data use, regions, content and spend, and their assignments."""

from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db import models

LIST_FIELDS = ("allowed_models", "allowed_providers", "ignored_models", "ignored_providers")
ZDR_FIELDS = ("enforce_zdr_vendor_a", "enforce_zdr_vendor_b", "enforce_zdr_vendor_c", "enforce_zdr_vendor_d",
              "enforce_zdr_other")  # fmt: skip
BOOLEAN_FIELDS = ("enable_free_model_publication", "enable_free_model_training", "enable_paid_model_training",
                  *ZDR_FIELDS, "include_byok_in_budgets")  # fmt: skip


class ResetInterval(models.TextChoices):
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"
    MONTHLY = "monthly", "Monthly"


class Guardrail(models.Model):
    """A policy placed in a workspace; it applies through key or member assignments.

    The workspace default guardrail (`is_default`) has the id derived from its workspace
    (`Workspace.default_guardrail_id`), exists only once it was first PATCHed, and applies to all traffic
    of its workspace. List fields are null (no restriction) or non-empty.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="guardrails")
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="guardrails")
    is_default = models.BooleanField(default=False, help_text="The workspace's default guardrail")
    name = models.CharField(max_length=200)
    description = models.CharField(max_length=1000, null=True, blank=True)
    allowed_data_regions = models.JSONField(null=True, blank=True)
    allowed_models = models.JSONField(null=True, blank=True)
    allowed_providers = models.JSONField(null=True, blank=True)
    ignored_models = models.JSONField(null=True, blank=True)
    ignored_providers = models.JSONField(null=True, blank=True)
    content_filter_builtins = models.JSONField(null=True, blank=True)
    content_filters = models.JSONField(null=True, blank=True)
    enable_free_model_publication = models.BooleanField(default=False)
    enable_free_model_training = models.BooleanField(default=False)
    enable_paid_model_training = models.BooleanField(default=False)
    enforce_zdr = models.BooleanField(
        null=True, blank=True, help_text="Deprecated; copied into the vendor fields", verbose_name="enforce ZDR"
    )
    enforce_zdr_vendor_a = models.BooleanField(default=False, verbose_name="enforce ZDR vendor A")
    enforce_zdr_vendor_b = models.BooleanField(default=False, verbose_name="enforce ZDR vendor B")
    enforce_zdr_vendor_c = models.BooleanField(default=False, verbose_name="enforce ZDR vendor C")
    enforce_zdr_vendor_d = models.BooleanField(default=False, verbose_name="enforce ZDR vendor D")
    enforce_zdr_other = models.BooleanField(default=False, verbose_name="enforce ZDR other")
    include_byok_in_budgets = models.BooleanField(default=False, verbose_name="include BYOK in budgets")
    limit_usd = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True, verbose_name="limit USD")
    reset_interval = models.CharField(max_length=10, choices=ResetInterval.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True, help_text="Null when never updated")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace"], condition=models.Q(is_default=True), name="guardrail_one_default_per_workspace"
            ),
            models.CheckConstraint(
                condition=models.Q(limit_usd__isnull=True) | models.Q(limit_usd__gte=0),
                name="guardrail_limit_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(limit_usd__isnull=False) | models.Q(reset_interval__isnull=True),
                name="guardrail_interval_needs_limit",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The API's rules for rows edited elsewhere (the Django admin): the data plane trusts stored rows."""
        from guardrails.validation import guardrail_row_errors

        errors = guardrail_row_errors(self)
        if errors:
            raise ValidationError(errors)


class GuardrailKeyAssignment(models.Model):
    """A guardrail assigned to an API key; a key holds at most one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    guardrail = models.ForeignKey(Guardrail, on_delete=models.CASCADE, related_name="key_assignments")
    api_key = models.OneToOneField(
        "accounts.ApiKey", on_delete=models.CASCADE, related_name="guardrail_assignment", verbose_name="API key"
    )
    assigned_by = models.ForeignKey(
        "accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.guardrail} → key {self.api_key_id}"


class GuardrailMemberAssignment(models.Model):
    """A guardrail assigned to an organization member (applies to the keys they created); one per member."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    guardrail = models.ForeignKey(Guardrail, on_delete=models.CASCADE, related_name="member_assignments")
    user = models.OneToOneField("accounts.User", on_delete=models.CASCADE, related_name="guardrail_assignment")
    assigned_by = models.ForeignKey(
        "accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.guardrail} → member {self.user_id}"
