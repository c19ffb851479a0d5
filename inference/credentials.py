"""Which provider keys an attempt on a candidate endpoint is made with, in order.

Routing (inference.routing) asks `credentials_for(ctx, candidate)` for every candidate and tries each
credential in turn; an authentication failure of one credential moves to the next. The organization's BYOK
credentials that allow the request come first (non-fallback ones by `sort_order`, then fallback ones; see
byok.routing), then the platform key, read from the environment variable the catalog names (`api_key_env`).
"""

from __future__ import annotations

import os

from byok.routing import platform_key_allowed, usable_credentials
from inference.pipeline.context import Candidate, Context, Credential
from inference.provider_config import key_env_problem


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
    credentials = await usable_credentials(ctx, candidate)
    if not await platform_key_allowed(ctx, candidate):
        return credentials
    platform = platform_credential(candidate)
    if platform is not None:
        credentials.append(platform)
    return credentials
