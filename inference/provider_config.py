"""Operator-set provider fields that need more than a type check: the environment variable of the platform
key (`api_key_env`) and per-provider time limits (`timeouts`). Used by the catalog loader, the admin form
(`Provider.clean`) and, for the key, once more when the key is read (`inference.credentials`).

`api_key_env` must match `GATEWAY_PROVIDER_KEY_ENV_PATTERN` (default `[A-Z][A-Z0-9_]*_(API_KEY|KEY|TOKEN)`)
and must not name one of the gateway's own secrets (a name starting with `DJANGO_`, `GATEWAY_`, `DATABASE_`,
`REDIS_`, or containing `SECRET` or `PASSWORD`): a catalog entry cannot make the gateway send, say,
`DJANGO_SECRET_KEY` to a provider as a bearer token.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from django.conf import settings

RESERVED_PREFIXES = ("DJANGO_", "GATEWAY_", "DATABASE_", "REDIS_")
RESERVED_WORDS = ("SECRET", "PASSWORD")
TIMEOUT_NAMES = ("connect", "first_byte", "read", "total")
MAX_TIMEOUT = 3600.0


@functools.lru_cache(maxsize=4)
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


def key_env_problem(name: str) -> str | None:
    """Why `name` may not be a provider's key variable, or None when it may."""
    if not name:
        return None
    if not _pattern(settings.GATEWAY_PROVIDER_KEY_ENV_PATTERN).fullmatch(name):
        return f"must match GATEWAY_PROVIDER_KEY_ENV_PATTERN ({settings.GATEWAY_PROVIDER_KEY_ENV_PATTERN})"
    if name.startswith(RESERVED_PREFIXES) or any(word in name for word in RESERVED_WORDS):
        return "names one of the gateway's own settings or secrets"
    return None


def timeouts_problem(value: Any) -> str | None:
    """Why `value` is not a valid `timeouts` object ({connect, first_byte, read, total} in seconds)."""
    if not isinstance(value, dict):
        return "must be an object"
    for key, seconds in value.items():
        if key not in TIMEOUT_NAMES:
            return f"has an unknown key {key!r} (known: {', '.join(TIMEOUT_NAMES)})"
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= MAX_TIMEOUT:
            return f"'{key}' must be a number of seconds greater than 0 and at most {MAX_TIMEOUT:g}"
    return None
