"""Models of the byok app: provider keys that organizations bring themselves (BYOK)."""

from __future__ import annotations

import uuid

from django.db import models


class ProviderCredential(models.Model):
    """A provider API key brought by an organization, encrypted at rest, used by routing before the platform key.

    The raw key is never stored: `key_ciphertext` holds its Fernet token (gateway_project.encryption) and
    `label` its masked form. `workspace` null means the credential is usable in every workspace of the
    organization. Each `allowed_*` list is a restriction; null means no restriction.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="byok_credentials")
    workspace = models.ForeignKey(
        "accounts.Workspace",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="byok_credentials",
        help_text="Empty: usable in every workspace of the organization",
    )
    provider = models.CharField(max_length=100, help_text="Catalog provider slug")
    name = models.CharField(max_length=255, null=True, blank=True)
    label = models.CharField(max_length=32, blank=True, default="", help_text="Masked form of the raw key")
    key_ciphertext = models.TextField(blank=True, default="", help_text="Fernet token of the raw key")
    disabled = models.BooleanField(default=False)
    is_fallback = models.BooleanField(default=False, help_text="Tried only after the non-fallback keys")
    sort_order = models.IntegerField(default=0)
    declared_zdr = models.BooleanField(
        null=True,
        blank=True,
        help_text="Operator's declaration of the upstream account's zero data retention; empty: the catalog's",
        verbose_name="declared ZDR",
    )
    is_required = models.BooleanField(
        default=False, help_text="The platform key of the provider is not used for the models this key applies to"
    )
    is_byok_only = models.BooleanField(
        default=False,
        help_text="The platform key of the provider is not used for any model (non-fallback keys only)",
        verbose_name="is BYOK only",
    )
    allowed_api_key_hashes = models.JSONField(null=True, blank=True, verbose_name="allowed API key hashes")
    allowed_models = models.JSONField(null=True, blank=True)
    allowed_user_ids = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider", "is_fallback", "sort_order", "created_at"]
        indexes = [models.Index(fields=["organization", "provider"], name="byok_org_provider")]
        constraints = [
            models.CheckConstraint(condition=models.Q(sort_order__gte=0), name="byok_sort_order_non_negative"),
            models.CheckConstraint(
                condition=~(models.Q(is_byok_only=True) & models.Q(is_fallback=True)), name="byok_only_not_fallback"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.label} ({self.name or self.id})"
