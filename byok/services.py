"""Writes of the byok app: create, update (rotating the raw key in place), delete, re-encrypt.

The raw provider key only passes through these functions on its way to `encrypt_secret`; it is never
logged, echoed in an error, or kept on the model instance.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.models import Organization, Workspace
from accounts.selectors import organization_keys
from byok.models import ProviderCredential
from gateway_project.api.errors import validation_error
from gateway_project.encryption import DecryptionFailed, encrypt_secret, rotate_secret
from inference.models import Provider

logger = logging.getLogger("gateway.byok")

RESTRICTION_FIELDS = ("allowed_api_key_hashes", "allowed_models", "allowed_user_ids")
ROUTING_SWITCHES = ("declared_zdr", "is_required", "is_byok_only")
UPDATABLE_FIELDS = ("name", "disabled", "is_fallback", "sort_order", *RESTRICTION_FIELDS, *ROUTING_SWITCHES)


def _check_switches(credential: ProviderCredential) -> None:
    if credential.is_byok_only and credential.is_fallback:
        raise validation_error("is_byok_only", "cannot be combined with is_fallback: only a prioritized key can be")


def mask_provider_key(raw_key: str) -> str:
    """The label of a raw key: its first 3 and last 4 characters (`sk-...AbCd`); short keys reveal less."""
    if len(raw_key) >= 16:
        return f"{raw_key[:3]}...{raw_key[-4:]}"
    if len(raw_key) >= 8:
        return f"...{raw_key[-2:]}"
    return "..."


def _check_provider(provider: str) -> None:
    if not Provider.objects.filter(slug=provider).exists():
        raise validation_error("provider", f"unknown provider '{provider}'")


def check_key_hashes(organization_id: uuid.UUID, hashes: list[str] | None) -> None:
    """400 when a hash does not name a key of the organization."""
    if not hashes:
        return
    organization_keys(organization_id=organization_id, key_hashes=hashes, field="allowed_api_key_hashes")


def set_provider_key(credential: ProviderCredential, raw_key: str) -> None:
    credential.key_ciphertext = encrypt_secret(raw_key)
    credential.label = mask_provider_key(raw_key)


def _next_sort_order(organization_id: uuid.UUID, provider: str) -> int:
    last = (
        ProviderCredential.objects.filter(organization_id=organization_id, provider=provider)
        .order_by("-sort_order")
        .values_list("sort_order", flat=True)
        .first()
    )
    return 0 if last is None else last + 1


@transaction.atomic
def provider_credential_create(
    *,
    organization: Organization,
    provider: str,
    raw_key: str,
    workspace: Workspace | None,
    name: str | None = None,
    disabled: bool = False,
    is_fallback: bool = False,
    sort_order: int | None = None,
    allowed_api_key_hashes: list[str] | None = None,
    allowed_models: list[str] | None = None,
    allowed_user_ids: list[str] | None = None,
    declared_zdr: bool | None = None,
    is_required: bool = False,
    is_byok_only: bool = False,
) -> ProviderCredential:
    """Store a new BYOK credential; `sort_order` defaults to after the organization's keys of that provider."""
    _check_provider(provider)
    check_key_hashes(organization.id, allowed_api_key_hashes)
    credential = ProviderCredential(
        organization=organization,
        workspace=workspace,
        provider=provider,
        name=name,
        disabled=disabled,
        is_fallback=is_fallback,
        sort_order=_next_sort_order(organization.id, provider) if sort_order is None else sort_order,
        allowed_api_key_hashes=allowed_api_key_hashes,
        allowed_models=allowed_models,
        allowed_user_ids=allowed_user_ids,
        declared_zdr=declared_zdr,
        is_required=is_required,
        is_byok_only=is_byok_only,
    )
    _check_switches(credential)
    set_provider_key(credential, raw_key)
    credential.save()
    logger.info("BYOK credential %s created for provider %s (%s)", credential.id, provider, credential.label)
    return credential


@transaction.atomic
def provider_credential_update(
    *, credential: ProviderCredential, data: dict[str, Any], raw_key: str | None = None
) -> ProviderCredential:
    """Apply a PATCH: only the present fields change, None clears a restriction, `raw_key` rotates in place."""
    if "allowed_api_key_hashes" in data:
        check_key_hashes(credential.organization_id, data["allowed_api_key_hashes"])
    for field in UPDATABLE_FIELDS:
        if field in data:
            setattr(credential, field, data[field])
    _check_switches(credential)
    if raw_key is not None:
        set_provider_key(credential, raw_key)
        logger.info("BYOK credential %s key rotated (%s)", credential.id, credential.label)
    credential.save()
    return credential


@transaction.atomic
def provider_credential_delete(*, credential: ProviderCredential) -> None:
    """Delete a credential, overwriting its key material first."""
    ProviderCredential.objects.filter(pk=credential.pk).update(key_ciphertext="", label="")
    credential.delete()
    logger.info("BYOK credential %s deleted", credential.pk)


@dataclass(frozen=True)
class ReencryptionResult:
    rotated: int
    failed: list[uuid.UUID]


def provider_credentials_reencrypt() -> ReencryptionResult:
    """Re-encrypt every stored key under the first configured encryption key (one row per transaction)."""
    rotated, failed = 0, []
    ids = list(ProviderCredential.objects.exclude(key_ciphertext="").values_list("id", flat=True))
    for credential_id in ids:
        with transaction.atomic():
            credential = ProviderCredential.objects.select_for_update().filter(pk=credential_id).first()
            if credential is None or not credential.key_ciphertext:
                continue
            try:
                credential.key_ciphertext = rotate_secret(credential.key_ciphertext)
            except DecryptionFailed:
                failed.append(credential_id)
                continue
            credential.save(update_fields=["key_ciphertext", "updated_at"])
            rotated += 1
    return ReencryptionResult(rotated=rotated, failed=failed)
