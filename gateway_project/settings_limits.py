"""Request-size and fan-out limits of the data plane, what rate limits do without their Redis, and the audit log's
retention, read from the environment (part of the settings module; every variable is listed, with its default, in
`.env.example` and the README)."""

import environ
from django.core.exceptions import ImproperlyConfigured

_env = environ.Env()

# /embeddings: `dimensions` at most this, and (inputs x dimensions) at most GATEWAY_EMBEDDINGS_MAX_VALUES when a
# request sets `dimensions` (the default: 2,048 inputs of text-embedding-3-large's 3,072 values, what OpenAI takes).
GATEWAY_EMBEDDINGS_MAX_DIMENSIONS = _env.int("GATEWAY_EMBEDDINGS_MAX_DIMENSIONS", default=16_384)
GATEWAY_EMBEDDINGS_MAX_VALUES = _env.int("GATEWAY_EMBEDDINGS_MAX_VALUES", default=2048 * 3072)
# service:web_fetch: calls one model turn may make, calls one request may make (all turns), fetches at once per
# request. Calls past a cap are not fetched: the model reads an error result saying so.
GATEWAY_WEB_FETCH_MAX_CALLS_PER_TURN = _env.int("GATEWAY_WEB_FETCH_MAX_CALLS_PER_TURN", default=10)
GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST = _env.int("GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST", default=30)
GATEWAY_WEB_FETCH_CONCURRENCY = _env.int("GATEWAY_WEB_FETCH_CONCURRENCY", default=4)
# The audit log keeps its records this many days (0: forever); `manage.py prune_audit_log` and the refusal
# writer (hourly) delete older ones.
GATEWAY_AUDIT_RETENTION_DAYS = _env.float("GATEWAY_AUDIT_RETENTION_DAYS", default=365.0)

# What a process that cannot reach the rate-limit Redis admits (docs/rate-limits.md, "When Redis fails"): database
# (its own window there), fail_closed (503 for rate-limited keys), fail_open (admitted uncounted).
GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE = _env.str("GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE", default="database")
if GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE not in ("database", "fail_closed", "fail_open"):
    raise ImproperlyConfigured("GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE must be database, fail_closed or fail_open")

__all__ = [name for name in dir() if name.startswith("GATEWAY_")]
