"""Reads of the byok app: the management listing and the routing snapshot of an organization's credentials."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db.models import QuerySet

from byok.models import ProviderCredential


def provider_credential_list(
    *, organization_id: uuid.UUID, workspace_id: uuid.UUID | None = None, provider: str | None = None
) -> QuerySet[ProviderCredential]:
    """The organization's credentials, optionally of one workspace and/or one provider."""
    queryset = ProviderCredential.objects.filter(organization_id=organization_id)
    if workspace_id is not None:
        queryset = queryset.filter(workspace_id=workspace_id)
    if provider:
        queryset = queryset.filter(provider=provider)
    return queryset.order_by("provider", "is_fallback", "sort_order", "created_at", "id")


def _as_set(values: list | None) -> frozenset[str] | None:
    return None if values is None else frozenset(str(v) for v in values)


@dataclass(frozen=True, slots=True)
class CredentialEntry:
    """What routing needs of one enabled credential (the key still encrypted)."""

    id: uuid.UUID
    provider: str
    workspace_id: uuid.UUID | None
    label: str
    ciphertext: str = field(default="", repr=False)
    allowed_api_key_hashes: frozenset[str] | None = None
    allowed_models: frozenset[str] | None = None
    allowed_user_ids: frozenset[str] | None = None
    declared_zdr: bool | None = None
    is_required: bool = False
    is_byok_only: bool = False

    def in_workspace(self, workspace_id: uuid.UUID | None) -> bool:
        return self.workspace_id is None or self.workspace_id == workspace_id

    def covers_model(self, model_slugs: tuple[str, ...]) -> bool:
        return self.allowed_models is None or any(slug in self.allowed_models for slug in model_slugs)

    def removes_platform_key(self, *, workspace_id: uuid.UUID | None, model_slugs: tuple[str, ...]) -> bool:
        """Whether this key takes the provider's platform key away from such a request (is_byok_only: for every
        model; is_required: for the models it applies to)."""
        if not self.in_workspace(workspace_id):
            return False
        return self.is_byok_only or (self.is_required and self.covers_model(model_slugs))

    def allows(
        self, *, workspace_id: uuid.UUID | None, key_hash: str, model_slugs: tuple[str, ...], user_id: str | None
    ) -> bool:
        """Whether a request of this workspace, key, model and user may use the credential."""
        if not self.in_workspace(workspace_id):
            return False
        if self.allowed_api_key_hashes is not None and key_hash not in self.allowed_api_key_hashes:
            return False
        if not self.covers_model(model_slugs):
            return False
        return self.allowed_user_ids is None or (user_id is not None and user_id in self.allowed_user_ids)


def routing_entries(*, organization_id: uuid.UUID) -> dict[str, tuple[CredentialEntry, ...]]:
    """Enabled credentials of the organization by provider slug, in the order routing tries them:
    non-fallback before fallback, then `sort_order`, then creation."""
    rows = (
        ProviderCredential.objects.filter(organization_id=organization_id, disabled=False)
        .exclude(key_ciphertext="")
        .order_by("is_fallback", "sort_order", "created_at", "id")
        .values_list(
            "id",
            "provider",
            "workspace_id",
            "label",
            "key_ciphertext",
            "allowed_api_key_hashes",
            "allowed_models",
            "allowed_user_ids",
            "declared_zdr",
            "is_required",
            "is_byok_only",
        )
    )
    by_provider: dict[str, list[CredentialEntry]] = {}
    for row in rows:
        entry = CredentialEntry(
            id=row[0],
            provider=row[1],
            workspace_id=row[2],
            label=row[3],
            ciphertext=row[4],
            allowed_api_key_hashes=_as_set(row[5]),
            allowed_models=_as_set(row[6]),
            allowed_user_ids=_as_set(row[7]),
            declared_zdr=row[8],
            is_required=row[9],
            is_byok_only=row[10],
        )
        by_provider.setdefault(entry.provider, []).append(entry)
    return {provider: tuple(entries) for provider, entries in by_provider.items()}
