"""Who is calling: the authenticated API key, resolved once per request for both planes.

`Principal` itself is a kernel type (gateway_project/pipeline.py), re-exported here; this module resolves one.
"""

from __future__ import annotations

from accounts.keys import hash_key
from accounts.models import ApiKey
from gateway_project.api.errors import GatewayError
from gateway_project.pipeline import Principal

__all__ = ["INVALID_KEY", "MISSING_HEADER", "Principal", "authenticate_header", "load_principal", "raw_key_from_header"]

MISSING_HEADER = "Missing Authentication header"
INVALID_KEY = "Invalid API key"


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
