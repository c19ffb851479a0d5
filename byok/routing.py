"""BYOK credentials for one routing candidate, on the data plane (async, cached per policy version).

`usable_credentials(ctx, candidate)` returns the organization's enabled BYOK keys for the candidate's
provider that allow the request (its workspace or global, the calling key hash, the model, the key's user),
non-fallback ones first, each group by `sort_order` (DECISIONS.md §6). The organization's credentials are
loaded once per policy version (one query), only the keys that apply are decrypted, each once per policy
version, and the answer for a (calling key, provider, model) is memoized per policy version.
"""

from __future__ import annotations

import logging

from byok.selectors import CredentialEntry, routing_entries
from gateway_project.db_deadline import db_reader
from gateway_project.encryption import DecryptionFailed, EncryptionNotConfigured, decrypt_secret
from gateway_project.policy_cache import PolicyCache
from inference.pipeline.context import Candidate, Context, Credential

logger = logging.getLogger("gateway.byok")

_entries_cache = PolicyCache("byok-entries")
_plaintext_cache = PolicyCache("byok-plaintext")
_usable_cache = PolicyCache("byok-usable")
_declared_cache = PolicyCache("byok-declared")

_load_entries = db_reader(routing_entries)


async def _by_provider(ctx: Context) -> dict[str, tuple[CredentialEntry, ...]]:
    organization_id = ctx.principal.organization_id

    async def load():
        return await _load_entries(organization_id=organization_id)

    return await _entries_cache.get(ctx.policy_version, organization_id, load, scope=organization_id)


async def _entries(ctx: Context, provider: str) -> tuple[CredentialEntry, ...]:
    return (await _by_provider(ctx)).get(provider, ())


async def declared_zdr_by_provider(ctx: Context) -> dict[str, frozenset[bool]]:
    """Provider slug -> the `declared_zdr` values of the enabled keys usable in the caller's workspace."""
    if ctx.principal is None:
        return {}
    workspace_id = ctx.principal.workspace_id

    async def compute():
        declared: dict[str, set[bool]] = {}
        for provider, entries in (await _by_provider(ctx)).items():
            for entry in entries:
                if entry.declared_zdr is not None and entry.in_workspace(workspace_id):
                    declared.setdefault(provider, set()).add(entry.declared_zdr)
        return {provider: frozenset(values) for provider, values in declared.items()}

    organization_id = ctx.principal.organization_id
    return await _declared_cache.get(
        ctx.policy_version, (organization_id, workspace_id), compute, scope=organization_id
    )


def _serves(entry: CredentialEntry, candidate: Candidate) -> bool:
    """A key declared ZDR (or not) serves only the candidate with that declaration; an undeclared one the
    catalog's candidate, and a declared one whose declaration equals the catalog's serves that one too."""
    if candidate.byok_declared_zdr is not None:
        return entry.declared_zdr == candidate.byok_declared_zdr
    return entry.declared_zdr is None or entry.declared_zdr == candidate.zdr


async def platform_key_allowed(ctx: Context, candidate: Candidate) -> bool:
    """False for a declared variant (its keys only) and when a key of the provider in the caller's workspace
    is `is_byok_only`, or `is_required` for this model."""
    if candidate.byok_declared_zdr is not None:
        return False
    if ctx.principal is None:
        return True
    model_slugs = (candidate.model_slug, candidate.canonical_slug)
    workspace_id = ctx.principal.workspace_id
    entries = await _entries(ctx, candidate.provider_slug)
    return not any(e.removes_platform_key(workspace_id=workspace_id, model_slugs=model_slugs) for e in entries)


async def _plaintext(ctx: Context, entry: CredentialEntry) -> str | None:
    async def decrypt():
        try:
            return decrypt_secret(entry.ciphertext)
        except (DecryptionFailed, EncryptionNotConfigured):
            logger.error("BYOK credential %s cannot be decrypted with the configured keys; skipped", entry.id)
            return None

    return await _plaintext_cache.get(
        ctx.policy_version, (entry.id, entry.ciphertext), decrypt, scope=ctx.principal.organization_id
    )


async def _compute(ctx: Context, candidate: Candidate) -> tuple[Credential, ...]:
    principal = ctx.principal
    entries = await _entries(ctx, candidate.provider_slug)
    if not entries:
        return ()
    user_id = str(principal.user_id) if principal.user_id is not None else None
    model_slugs = (candidate.model_slug, candidate.canonical_slug)
    credentials = []
    for entry in entries:
        if not _serves(entry, candidate):
            continue
        if not entry.allows(
            workspace_id=principal.workspace_id, key_hash=principal.key_hash, model_slugs=model_slugs, user_id=user_id
        ):
            continue
        api_key = await _plaintext(ctx, entry)
        if api_key is not None:
            credentials.append(Credential(api_key=api_key, is_byok=True, byok_id=entry.id, label=entry.label))
    return tuple(credentials)


async def usable_credentials(ctx: Context, candidate: Candidate) -> list[Credential]:
    """The BYOK credentials to try for `candidate`, in order (empty without a principal).

    The answer depends only on the calling key (its organization, workspace and creator), the provider and
    the model, so it is memoized on those per policy version: a warm request costs one dict lookup.
    """
    if ctx.principal is None:
        return []
    key = (
        ctx.principal.key_hash,
        candidate.provider_slug,
        candidate.model_slug,
        candidate.canonical_slug,
        candidate.zdr,
        candidate.byok_declared_zdr,
    )

    async def compute():
        return await _compute(ctx, candidate)

    return list(await _usable_cache.get(ctx.policy_version, key, compute, scope=ctx.principal.organization_id))


def clear_caches() -> None:
    """Forget cached entries and decrypted keys (tests, encryption-key rotation)."""
    _entries_cache.clear()
    _plaintext_cache.clear()
    _usable_cache.clear()
    _declared_cache.clear()
