"""Which provider keys an attempt on a candidate endpoint is made with, in order.

Routing (inference.routing) asks `credentials_for(ctx, candidate)` for every candidate and tries each
credential in turn; an authentication failure of one credential moves to the next. The organization's BYOK
credentials that allow the request come first (non-fallback ones by `sort_order`, then fallback ones; see
byok.routing), then the platform key, read from the environment variable the catalog names (`api_key_env`).

inference does not import byok (docs/architecture.md): the organization's keys come from `organization_keys`,
an `OrganizationKeys` (gateway_project/pipeline.py) that byok's AppConfig.ready() registers (the byok.routing
module). Without byok installed there are none and the platform key serves every candidate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from inference.pipeline.context import Candidate, Context, Credential, OrganizationKeys
from inference.provider_config import key_env_problem


class NoOrganizationKeys:
    """No BYOK (byok/ not installed): no organization keys, the platform key for every candidate."""

    async def usable_credentials(self, ctx: Context, candidate: Candidate) -> list[Credential]:
        return []

    async def platform_key_allowed(self, ctx: Context, candidate: Candidate) -> bool:
        return True

    async def declared_zdr_by_provider(self, ctx: Context) -> Mapping[str, frozenset[bool]]:
        return {}


organization_keys: OrganizationKeys = NoOrganizationKeys()


def register_organization_keys(provider: OrganizationKeys) -> None:
    """Where routing gets the organization's own keys from (byok's AppConfig.ready(); the last one wins)."""
    global organization_keys
    organization_keys = provider


def platform_credential(candidate: Candidate) -> Credential | None:
    """The platform key of the candidate's provider, or None when it is not configured."""
    if candidate.api_format == "echo":
        return Credential(api_key="", is_byok=False, label="echo")
    if not candidate.platform_key_env or key_env_problem(candidate.platform_key_env):
        return None  # (a name refused at load can still reach the table through a direct write)
    value = os.environ.get(candidate.platform_key_env, "")
    return Credential(api_key=value, is_byok=False, label="platform") if value else None


async def credentials_for(ctx: Context, candidate: Candidate) -> list[Credential]:
    """The credentials to try for `candidate`, in order: usable BYOK credentials, then the platform key unless
    a BYOK key takes it away (`is_byok_only`, `is_required`) or the candidate is a BYOK declaration's."""
    keys = organization_keys
    credentials = await keys.usable_credentials(ctx, candidate)
    if not await keys.platform_key_allowed(ctx, candidate):
        return credentials
    platform = platform_credential(candidate)
    if platform is not None:
        credentials.append(platform)
    return credentials
