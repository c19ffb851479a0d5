"""Settings of the delivery worker: a Django setting of the same name wins (tests), else the environment."""

from __future__ import annotations

import environ
from django.conf import settings

_env = environ.Env()

DEFAULTS: dict[str, tuple[type, float]] = {
    "GATEWAY_OBSERVABILITY_MAX_ATTEMPTS": (int, 8),
    "GATEWAY_OBSERVABILITY_CONCURRENCY": (int, 8),
    "GATEWAY_OBSERVABILITY_BACKOFF_BASE_SECONDS": (float, 2.0),
    "GATEWAY_OBSERVABILITY_BACKOFF_MAX_SECONDS": (float, 600.0),
    "GATEWAY_OBSERVABILITY_TIMEOUT_SECONDS": (float, 10.0),
    "GATEWAY_OBSERVABILITY_POLL_SECONDS": (float, 1.0),
    "GATEWAY_OBSERVABILITY_RETENTION_DAYS": (float, 7.0),
    "GATEWAY_OBSERVABILITY_MAX_BODY_BYTES": (int, 1_048_576),
    "GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS": (float, 7.0),
}


def setting(name: str):
    cast, default = DEFAULTS[name]
    if hasattr(settings, name):
        return cast(getattr(settings, name))
    return cast(_env(name, cast=cast, default=default))
