"""Data-plane authentication: the first middleware of the inference chain."""

from __future__ import annotations

from accounts.auth_throttle import failed_authentications
from accounts.keys import hash_key
from accounts.principal import INVALID_KEY, load_principal, raw_key_from_header
from gateway_project.api.errors import GatewayError
from gateway_project.db_deadline import db_reader
from gateway_project.pipeline import Context
from gateway_project.policy_cache import KEYS, PolicyCache, current_policy_version

# Known keys only, each dropped when its organization changes. Unknown keys go to their own, smaller cache
# (oldest out, dropped when any key is created or changed), so a flood of random keys never evicts known
# ones nor makes a cache flush itself whole.
_principals = PolicyCache("principals")
_unknown_keys = PolicyCache("unknown-keys", max_entries=10_000)
_load_principal = db_reader(load_principal)


async def _principal(version: int, key_hash: str, address: str):
    """The key's principal (cached), or None when no such key exists; 429 for an address flooding unknown keys."""
    principal = _principals.peek(version, key_hash)
    if principal is not None:
        return principal
    if _unknown_keys.peek(version, key_hash) is None:
        failed_authentications.check(address, key_hash)  # before the database lookup
        drops = _unknown_keys.drops
        principal = await _principals.get(
            version, key_hash, lambda: _load_principal(key_hash), scope=_organization_of, cache_none=False
        )
        if principal is not None:
            failed_authentications.remember(key_hash)
            return principal
        _unknown_keys.put(version, key_hash, True, KEYS, drops)
    failed_authentications.record(address)
    return None


def _organization_of(principal):
    return principal.organization_id


class KeyAuthMiddleware:
    """`Authorization: Bearer <key>` → ctx.principal (401 when missing, unknown, disabled or expired; 429 for
    an address that sent too many unknown keys, see accounts/auth_throttle.py).

    Also reads the policy version once for the whole request (ctx.policy_version); every later cached
    lookup of the request uses it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        raw_key = raw_key_from_header(ctx.headers.get("authorization"))
        ctx.policy_version = await current_policy_version()
        key_hash = hash_key(raw_key)
        principal = await _principal(ctx.policy_version, key_hash, ctx.client_address)
        if principal is None:
            raise GatewayError(401, INVALID_KEY)
        principal.check_usable()
        ctx.principal = principal
        await self.get_response(ctx)
