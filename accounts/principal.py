"""Who is calling: the authenticated API key, resolved once per request for both planes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from accounts.keys import hash_key
from accounts.models import ApiKey
from gateway_project.api.errors import GatewayError

MISSING_HEADER = "Missing Authentication header"
INVALID_KEY = "Invalid API key"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated API key with what the planes need about it (no ORM access after resolution)."""

    key_id: uuid.UUID
    key_hash: str
    key_name: str
    organization_id: uuid.UUID
    workspace_id: uuid.UUID
    user_id: uuid.UUID | None
    is_management: bool
    disabled: bool
    expires_at: datetime | None
    limit: Decimal | None
    limit_reset: str | None
    include_byok_in_limit: bool
    # Per-minute rate limits of the key and of its workspace (None: unlimited); see ratelimits/.
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    workspace_requests_per_minute: int | None = None
    workspace_tokens_per_minute: int | None = None
    response_cache: bool = False  # the workspace caches answers by default (responsecache/)

    # DRF reads request.user.is_authenticated.
    is_authenticated = True

    @classmethod
    def from_key(cls, key: ApiKey) -> Principal:
        return cls(
            key_id=key.id,
            key_hash=key.hash,
            key_name=key.name,
            organization_id=key.organization_id,
            workspace_id=key.workspace_id,
            user_id=key.creator_id,
            is_management=key.is_management,
            disabled=key.disabled,
            expires_at=key.expires_at,
            limit=key.limit,
            limit_reset=key.limit_reset,
            include_byok_in_limit=key.include_byok_in_limit,
            requests_per_minute=key.requests_per_minute,
            tokens_per_minute=key.tokens_per_minute,
            workspace_requests_per_minute=key.workspace.requests_per_minute,
            workspace_tokens_per_minute=key.workspace.tokens_per_minute,
            response_cache=key.workspace.response_cache_enabled,
        )

    def check_usable(self) -> None:
        """401 for a disabled or expired key."""
        if self.disabled:
            raise GatewayError(401, "API key is disabled")
        if self.expires_at is not None and self.expires_at <= timezone.now():
            raise GatewayError(401, "API key has expired")


def raw_key_from_header(value: str | None) -> str:
    """The raw key of an `Authorization: Bearer <key>` header, or 401."""
    if not value:
        raise GatewayError(401, MISSING_HEADER)
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise GatewayError(401, INVALID_KEY)
    return token


def load_principal(key_hash: str) -> Principal | None:
    """The principal of a key hash, or None when no such key exists (sync, one query)."""
    key = ApiKey.objects.filter(hash=key_hash).select_related("workspace").first()
    return Principal.from_key(key) if key else None


def authenticate_header(value: str | None, address: str = "") -> Principal:
    """Resolve an Authorization header to a usable principal (sync), or raise 401.

    429 instead, before the lookup, when the client `address` sent too many unknown keys in the last minute
    (accounts/auth_throttle.py).
    """
    from accounts.auth_throttle import failed_authentications

    key_hash = hash_key(raw_key_from_header(value))
    failed_authentications.check(address, key_hash)
    principal = load_principal(key_hash)
    if principal is None:
        failed_authentications.record(address)
        raise GatewayError(401, INVALID_KEY)
    failed_authentications.remember(key_hash)
    principal.check_usable()
    return principal
