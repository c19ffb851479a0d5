"""Data-plane authentication: the first middleware of the inference chain."""

from __future__ import annotations

from accounts.keys import hash_key
from accounts.principal import INVALID_KEY, load_principal, raw_key_from_header
from gateway_project.api.errors import GatewayError
from gateway_project.db_deadline import db_reader
from gateway_project.policy_cache import KEYS, PolicyCache, current_policy_version
from inference.pipeline.context import Context

# Known keys, each dropped when its organization changes; unknown keys (negative answers) apart, bounded,
# oldest first out, and dropped when any key is created or changed: random bearer tokens never push a
# known key out, nor make the cache flush itself whole.
_principals = PolicyCache("principals")
_unknown_keys = PolicyCache("unknown-keys", max_entries=10_000)
_load_principal = db_reader(load_principal)


async def principal_for(version: int, key_hash: str):
    """The principal of `key_hash`, or None for an unknown key (both cached per policy version)."""
    if _unknown_keys.contains(version, key_hash):
        return None
    drops = _unknown_keys.drops
    principal = await _principals.get(
        version, key_hash, lambda: _load_principal(key_hash), scope=lambda p: p.organization_id if p else KEYS
    )
    if principal is None:
        _principals.forget(key_hash)
        _unknown_keys.put(version, key_hash, None, KEYS, drops)
    return principal


class KeyAuthMiddleware:
    """`Authorization: Bearer <key>` → ctx.principal (401 when missing, unknown, disabled or expired).

    Also reads the policy version once for the whole request (ctx.policy_version); every later cached
    lookup of the request uses it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        raw_key = raw_key_from_header(ctx.headers.get("authorization"))
        ctx.policy_version = await current_policy_version()
        key_hash = hash_key(raw_key)
        principal = await principal_for(ctx.policy_version, key_hash)
        if principal is None:
            raise GatewayError(401, INVALID_KEY)
        principal.check_usable()
        ctx.principal = principal
        await self.get_response(ctx)
