"""Reads of the accounts app."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from accounts import usage as key_spend
from accounts.models import ApiKey, User, Workspace
from accounts.usage import USAGE_FIELDS
from gateway_project.api.errors import GatewayError, validation_error


def workspace_get(*, organization_id: uuid.UUID, id_or_slug: str) -> Workspace:
    """A workspace of the organization by uuid or slug, or 404."""
    queryset = Workspace.objects.filter(organization_id=organization_id)
    try:
        workspace_id = uuid.UUID(str(id_or_slug))
    except ValueError:
        workspace = queryset.filter(slug=id_or_slug).first()
    else:
        workspace = queryset.filter(id=workspace_id).first()
    if workspace is None:
        raise GatewayError(404, "Workspace not found")
    return workspace


def organization_keys(*, organization_id: uuid.UUID, key_hashes: list[str], field: str) -> list[ApiKey]:
    """The keys of the organization with these hashes; 400 naming `field` when one is unknown there."""
    wanted = list(dict.fromkeys(key_hashes))
    keys = list(ApiKey.objects.filter(organization_id=organization_id, hash__in=wanted))
    found = {key.hash for key in keys}
    missing = [h for h in wanted if h not in found]
    if missing:
        raise validation_error(field, f"unknown API key hash '{missing[0]}' for this organization")
    return keys


def organization_users(*, organization_id: uuid.UUID, user_ids: list, field: str) -> list[User]:
    """The members of the organization with these ids; 400 naming `field` when one is unknown there."""
    wanted = list(dict.fromkeys(str(raw) for raw in user_ids))
    parsed: dict[str, uuid.UUID] = {}
    for raw in wanted:
        try:
            parsed[raw] = uuid.UUID(raw)
        except ValueError:
            raise validation_error(field, f"unknown user id '{raw}'") from None
    users = list(User.objects.filter(organization_id=organization_id, id__in=parsed.values()))
    found = {user.id for user in users}
    missing = [raw for raw, value in parsed.items() if value not in found]
    if missing:
        raise validation_error(field, f"unknown user id '{missing[0]}'")
    return users


def usage_by_key(key_hashes: list[str], now: datetime | None = None) -> dict[str, dict[str, Decimal]]:
    """Spend (USD) of each key, all time and in the current day/week/month, platform and BYOK apart."""
    result = {h: dict.fromkeys(USAGE_FIELDS, Decimal(0)) for h in key_hashes}
    result.update(key_spend.usage_source.usage_by_key(key_hashes, now or timezone.now()))
    return result


def limit_remaining(api_key: ApiKey, usage: dict[str, Decimal]) -> Decimal | None:
    """What is left of the key's own limit in its current reset interval (None without a limit)."""
    if api_key.limit is None:
        return None
    suffix = {"daily": "_daily", "weekly": "_weekly", "monthly": "_monthly"}.get(api_key.limit_reset or "", "")
    spent = usage[f"usage{suffix}"]
    if api_key.include_byok_in_limit:
        spent += usage[f"byok_usage{suffix}"]
    return max(api_key.limit - spent, Decimal(0))
