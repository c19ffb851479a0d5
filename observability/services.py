"""Writes of the observability app: destinations (create, update, soft delete) and outbox rows (the write of
every generation's deliveries is observability/outbox.py)."""

from __future__ import annotations

import logging
import re
import uuid

from django.db import transaction
from django.utils import timezone

from accounts.models import Organization, Workspace
from accounts.selectors import organization_keys
from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.encryption import EncryptionNotConfigured, mask_secret
from observability.filters import FilterRulesError, validate_filter_rules
from observability.models import (
    FINISHED_STATUSES,
    MAX_DESTINATIONS_PER_TYPE,
    DeliveryStatus,
    Destination,
    OutboxEntry,
)
from observability.outbox import outbox_record  # noqa: F401  (the accounting receiver's entry point)
from observability.types import TYPE_SPECS, validate_config

logger = logging.getLogger("gateway.observability")

KEY_HASH = re.compile(r"^[a-f0-9]{64}$")
MAX_KEY_HASHES = 1000
PLAIN_FIELDS = (
    "name",
    "enabled",
    "broadcast_generation_cost",
    "broadcast_generation_identity",
    "broadcast_generation_request_context",
    "broadcast_generation_cost_allocation",
    "regions",
    "privacy_mode",
    "sampling_rate",
)


def _check_config(type_: str, config: dict) -> None:
    problems = validate_config(type_, config)
    if problems:
        raise validation_error(*problems[0])


def _check_key_hashes(organization_id, hashes: list[str] | None) -> list[str] | None:
    if hashes is None:
        return None
    if not hashes:
        raise validation_error("api_key_hashes", "must contain at least 1 element, or be null for all keys")
    if len(hashes) > MAX_KEY_HASHES:
        raise validation_error("api_key_hashes", f"must contain at most {MAX_KEY_HASHES} elements")
    for value in hashes:
        if not isinstance(value, str) or not KEY_HASH.match(value):
            raise validation_error("api_key_hashes", f"'{value}' is not a key hash (64 lowercase hex characters)")
    organization_keys(organization_id=organization_id, key_hashes=hashes, field="api_key_hashes")
    return list(dict.fromkeys(hashes))


def _check_filter_rules(rules):
    try:
        return validate_filter_rules(rules)
    except FilterRulesError as exc:
        raise validation_error(exc.field, exc.message) from None


def _check_type_limit(workspace: Workspace, type_: str) -> None:
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    count = Destination.objects.filter(workspace=workspace, type=type_, deleted_at__isnull=True).count()
    if count >= MAX_DESTINATIONS_PER_TYPE:
        raise GatewayError(
            409,
            f"At most {MAX_DESTINATIONS_PER_TYPE} destinations of type '{type_}' per workspace",
            metadata={"type": type_, "limit": MAX_DESTINATIONS_PER_TYPE},
        )


def _resolve_workspace(organization: Organization, workspace_id) -> Workspace:
    if workspace_id:
        from accounts.selectors import workspace_get

        try:
            return workspace_get(organization_id=organization.id, id_or_slug=workspace_id)
        except GatewayError:
            raise validation_error("workspace_id", f"unknown workspace '{workspace_id}'") from None
    if organization.default_workspace_id is None:
        raise validation_error("workspace_id", "is required: the organization has no default workspace")
    return organization.default_workspace


@transaction.atomic
def destination_create(*, organization: Organization, data: dict) -> Destination:
    """Create a destination from validated request data (config checked for its type, limits enforced)."""
    type_ = data["type"]
    config = data.get("config") or {}
    _check_config(type_, config)
    workspace = _resolve_workspace(organization, data.get("workspace_id"))
    destination = Destination(organization=organization, workspace=workspace, type=type_)
    for name in PLAIN_FIELDS:
        if name in data:
            setattr(destination, name, data[name])
    destination.api_key_hashes = _check_key_hashes(organization.id, data.get("api_key_hashes"))
    destination.filter_rules = _check_filter_rules(data.get("filter_rules"))
    _store_config(destination, config)
    _check_type_limit(workspace, type_)
    destination.save()
    return destination


def _store_config(destination: Destination, config: dict) -> None:
    try:
        destination.set_full_config(config)
    except EncryptionNotConfigured:
        logger.error("destination secrets cannot be encrypted: GATEWAY_BYOK_ENCRYPTION_KEYS is not set")
        raise GatewayError(500, "Destination secrets cannot be stored: encryption keys are not configured") from None


def _merge_config(destination: Destination, patch: dict) -> dict:
    """Stored config updated by a partial one: masked secrets and absent keys keep their stored value."""
    spec = TYPE_SPECS[destination.type]
    stored = destination.full_config()
    merged = dict(stored)
    for key, value in patch.items():
        if key == "headers" and isinstance(value, dict):
            old = stored.get("headers", {})
            merged["headers"] = {
                n: old[n] if n in old and isinstance(v, str) and v == mask_secret(old[n]) else v
                for n, v in value.items()
            }
        elif key in spec.secrets and key in stored and isinstance(value, str) and value == mask_secret(stored[key]):
            continue
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@transaction.atomic
def destination_update(*, destination: Destination, data: dict) -> Destination:
    """Apply a PATCH: only the members present change; null clears `api_key_hashes` and `filter_rules`."""
    if "config" in data:
        config = data["config"] or {}
        problems = validate_config(destination.type, config, partial=True)
        if problems:
            raise validation_error(*problems[0])
        merged = _merge_config(destination, config)
        _check_config(destination.type, merged)
        _store_config(destination, merged)
    for name in PLAIN_FIELDS:
        if name in data:
            setattr(destination, name, data[name])
    if "api_key_hashes" in data:
        destination.api_key_hashes = _check_key_hashes(destination.organization_id, data["api_key_hashes"])
    if "filter_rules" in data:
        destination.filter_rules = _check_filter_rules(data["filter_rules"])
    destination.save()
    return destination


def destination_delete(*, destination: Destination) -> None:
    """Soft delete: the row stays (its outbox history too) but is no longer listed, matched or delivered to."""
    destination.deleted_at = timezone.now()
    destination.enabled = False
    destination.save(update_fields=["deleted_at", "enabled", "updated_at"])


def outbox_entry_retry(*, entries) -> int:
    """Put dead (or any undelivered) rows back in the queue with a fresh attempt budget."""
    return (
        OutboxEntry.objects.filter(pk__in=[e.pk for e in entries])
        .exclude(status=DeliveryStatus.DELIVERED)
        .update(status=DeliveryStatus.PENDING, attempts=0, next_attempt_at=timezone.now(), claim_token=None)
    )


def outbox_purge_delivered(*, older_than) -> int:
    """Delete delivered and filtered-out rows finished before `older_than` (dead rows stay for the admin);
    returns how many."""
    deleted, _ = OutboxEntry.objects.filter(status__in=FINISHED_STATUSES, delivered_at__lt=older_than).delete()
    return deleted


def destination_secrets_reencrypt() -> tuple[int, list[uuid.UUID]]:
    """Re-encrypt every destination's secret config under the first encryption key (key rotation).

    Returns (how many were re-encrypted, ids that no configured key can decrypt).
    """
    from gateway_project.encryption import DecryptionFailed, rotate_secret

    rotated, failed = 0, []
    for destination in Destination.objects.exclude(secret_config="").only("id", "secret_config").iterator():
        try:
            token = rotate_secret(destination.secret_config)
        except DecryptionFailed:
            failed.append(destination.id)
            continue
        Destination.objects.filter(pk=destination.pk).update(secret_config=token)
        rotated += 1
    return rotated, failed
