"""Settings of the model gateway, read from the environment through django-environ.

Every variable is listed, with its default, in `.env.example` and the README.
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from gateway_project.db_options import SQLITE_OPTIONS, postgres_options, serves_requests

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
# Request-size and fan-out limits (embeddings, web_fetch), after .env is read.
from gateway_project.settings_limits import *  # noqa: E402, F403

DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false (`make run` writes one into .env)"
        )
    SECRET_KEY = "insecure-development-secret-key"
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["*"])

INSTALLED_APPS = [
    "daphne",
    "operations",  # first: its templates (admin and ReDoc pages with the favicon, no outside font) win
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "accounts",
    "inference",
    "guardrails",
    "presets",
    "observability",
    "byok",
    "scim",
    "budgets",
    "ratelimits",
    "rankings",
    "audit",
    "analytics",
    "responsecache",
]

MIDDLEWARE = [
    "gateway_project.api.middleware.ErrorEnvelopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "audit.recording.AuditContextMiddleware",  # management changes recorded with their actor (audit/)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gateway_project.urls"
ASGI_APPLICATION = "gateway_project.asgi.application"
WSGI_APPLICATION = "gateway_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Persistent connections on every backend: on SQLite too, where the data plane's database calls all run on
# one thread and opening and closing the file's connection around each of them cost about 15% of the
# worker's time under load (docs/performance.md).
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL, a busy timeout and BEGIN IMMEDIATE transactions (gateway_project/db_options.py).
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Time limits, so an unreachable or black-holed database is a 503 within seconds, never a hang
        # (gateway_project/db_options.py; behind pgbouncer, which refuses startup options, set
        # DATABASE_STATEMENT_TIMEOUT_MS=0 and DATABASE_LOCK_TIMEOUT_MS=0 and set them on the role).
        for _name, _value in postgres_options(env, server_limits=serves_requests()).items():
            DATABASES["default"].setdefault("OPTIONS", {}).setdefault(_name, _value)
        # Behind pgbouncer in transaction mode: QuerySet.iterator() must not open server-side cursors (their
        # WITH HOLD cursors outlive the transaction that pgbouncer hands back to its pool; docs/performance.md).
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool("DATABASE_DISABLE_SERVER_SIDE_CURSORS", False)

# Server limits: the request head's size (gateway_project/serve.py gives it to uvicorn; docs/deploy.md, "Request
# limits") and the time a request's body may take to arrive after its head (408, gateway_project/read_deadline.py).
GATEWAY_MAX_HEADER_BYTES = env.int("GATEWAY_MAX_HEADER_BYTES", default=65_536)
GATEWAY_REQUEST_READ_TIMEOUT_SECONDS = env.float("GATEWAY_REQUEST_READ_TIMEOUT_SECONDS", default=60.0)
# Deadline of each data-plane database call (gateway_project/db_deadline.py): past it the request gets 503
# and the stuck call's socket is shut down. The accounting writer's batches get 6 times as long.
GATEWAY_DB_DEADLINE_SECONDS = env.float("GATEWAY_DB_DEADLINE_SECONDS", default=5.0)
# Connections of each event loop's pool for the budget hold and settlement (gateway_project/loop_pg.py); statements
# arriving while they are all busy are sent together, in one pipeline, by the first one that frees up.
GATEWAY_DB_LOOP_CONNECTIONS = env.int("GATEWAY_DB_LOOP_CONNECTIONS", default=1)

REDIS_URL = env.str("REDIS_URL", default="")

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Served by the ASGI application (operations/static_files.py, WhiteNoise): compressed, content-hashed names
# cached for ten years; other files for WHITENOISE_MAX_AGE seconds.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "operations.static_storage.GatewayStaticFilesStorage"},
}
WHITENOISE_MAX_AGE = env.int("GATEWAY_STATIC_MAX_AGE", default=0 if DEBUG else 3600)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Security headers.
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Production (DJANGO_DEBUG false): the admin's session and CSRF cookies only over HTTPS, HSTS on HTTPS answers
# (behind a TLS-terminating proxy set DJANGO_TRUST_X_FORWARDED_PROTO so Django sees the request as HTTPS).
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
if env.bool("DJANGO_TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Messages (the admin shows a new key's raw value once) live in the server-side session, never in a cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
# Admin sign-in throttling (accounts/admin_login.py).
GATEWAY_ADMIN_LOGIN_FAILURES = env.int("GATEWAY_ADMIN_LOGIN_FAILURES", default=5)
GATEWAY_ADMIN_LOGIN_WINDOW_SECONDS = env.int("GATEWAY_ADMIN_LOGIN_WINDOW_SECONDS", default=900)

# SSRF guard (gateway_project/netguard.py): observability destination URLs and catalog base_urls may not point
# at private, loopback or link-local addresses unless GATEWAY_ALLOW_PRIVATE_URLS is true or the host name or a
# CIDR containing its address is in GATEWAY_PRIVATE_URL_ALLOWLIST.
GATEWAY_ALLOW_PRIVATE_URLS = env.bool("GATEWAY_ALLOW_PRIVATE_URLS", default=False)
GATEWAY_PRIVATE_URL_ALLOWLIST = env.list("GATEWAY_PRIVATE_URL_ALLOWLIST", default=[])

# Request bodies larger than this get 413 before they are parsed.
GATEWAY_MAX_BODY_BYTES = env.int("GATEWAY_MAX_BODY_BYTES", default=25 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = GATEWAY_MAX_BODY_BYTES
# Streamed answers: an SSE comment is written after this many seconds without a byte to the client (0: never).
GATEWAY_SSE_KEEPALIVE_SECONDS = env.float("GATEWAY_SSE_KEEPALIVE_SECONDS", default=15.0)
# Browser origins allowed to call the data plane (CORS); empty: none; "*": any.
GATEWAY_CORS_ALLOWED_ORIGINS = [o.rstrip("/") for o in env.list("GATEWAY_CORS_ALLOWED_ORIGINS", default=[])]

# The management API's DRF and OpenAPI settings (constants, no environment): gateway_project/api_settings.py.
from gateway_project.api_settings import REST_FRAMEWORK, SPECTACULAR_SETTINGS  # noqa: E402, F401

# The inference (data plane) middleware chain, outermost first. See inference/pipeline/runner.py.
GATEWAY_INFERENCE_MIDDLEWARE = env.list(
    "GATEWAY_INFERENCE_MIDDLEWARE",
    default=[
        "operations.measure.MetricsMiddleware",  # hands the Context to the /metrics observation (no work)
        "accounts.middleware.KeyAuthMiddleware",
        "guardrails.middleware.RegionMiddleware",
        "presets.middleware.PresetMiddleware",
        "guardrails.middleware.GuardrailMiddleware",
        "ratelimits.middleware.RateLimitMiddleware",
        "responsecache.middleware.ResponseCacheMiddleware",  # after auth, guardrails, rate limits; before budgets
        "budgets.middleware.BudgetMiddleware",
        "inference.middleware.AccountingMiddleware",
    ],
)

# Rate limits (ratelimits/): the Redis holding the rate-limit windows (default REDIS_URL; empty without
# REDIS_URL: the database holds them). Redis calls time out after this many milliseconds, and after a Redis failure a
# process checks limits in the database for this many milliseconds before it tries Redis again.
GATEWAY_RATE_LIMIT_REDIS_URL = env.str("GATEWAY_RATE_LIMIT_REDIS_URL", default=REDIS_URL)
GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS = env.int("GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS", default=500)
GATEWAY_RATE_LIMIT_REDIS_RETRY_MS = env.int("GATEWAY_RATE_LIMIT_REDIS_RETRY_MS", default=1000)
# How long a lease admits a busy key's requests in one process without asking Redis (ratelimits/redis_leases.py);
# 0 turns leases off (every request checked in Redis, as versions without leases do: use 0 while upgrading from one).
GATEWAY_RATE_LIMIT_LEASE_MS = env.str("GATEWAY_RATE_LIMIT_LEASE_MS", default="50").strip()
if not (GATEWAY_RATE_LIMIT_LEASE_MS.isdigit() and int(GATEWAY_RATE_LIMIT_LEASE_MS) <= 1000):
    raise ImproperlyConfigured(
        "GATEWAY_RATE_LIMIT_LEASE_MS must be an integer from 0 (no leases) to 1000, "
        f"not {GATEWAY_RATE_LIMIT_LEASE_MS!r}"
    )
GATEWAY_RATE_LIMIT_LEASE_MS = int(GATEWAY_RATE_LIMIT_LEASE_MS)
# Unknown bearer keys accepted per client address per minute (both planes) before that address gets 429.
GATEWAY_AUTH_FAILURES_PER_MINUTE = env.int("GATEWAY_AUTH_FAILURES_PER_MINUTE", default=60)

# Response cache (responsecache/, docs/cache.md): opt-in per request (X-Service-Cache: enabled) or per workspace.
# Entries live in this Redis (default REDIS_URL; empty: the database), and in the database while Redis fails (calls
# time out after GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS; the database is used for GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS
# after a failure). TTLs in seconds: the default when the request sends no X-Service-Cache-TTL, and the largest
# accepted. An answer larger than MAX_ENTRY_BYTES is not stored; an organization keeps at most MAX_ENTRIES entries
# (the ones closest to expiry are dropped first), so its cache holds at most MAX_ENTRIES x MAX_ENTRY_BYTES.
GATEWAY_RESPONSE_CACHE_REDIS_URL = env.str("GATEWAY_RESPONSE_CACHE_REDIS_URL", default=REDIS_URL)
GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS = env.int("GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS", default=500)
GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS = env.int("GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS", default=1000)
GATEWAY_RESPONSE_CACHE_DEFAULT_TTL = env.int("GATEWAY_RESPONSE_CACHE_DEFAULT_TTL", default=300)
GATEWAY_RESPONSE_CACHE_MAX_TTL = env.int("GATEWAY_RESPONSE_CACHE_MAX_TTL", default=86400)
GATEWAY_RESPONSE_CACHE_MAX_ENTRY_BYTES = env.int("GATEWAY_RESPONSE_CACHE_MAX_ENTRY_BYTES", default=1048576)
GATEWAY_RESPONSE_CACHE_MAX_ENTRIES = env.int("GATEWAY_RESPONSE_CACHE_MAX_ENTRIES", default=10000)

# Budgets: a request's spend hold is released after this many seconds if its process died before settling
# it (longer than any request may run). Output tokens assumed when neither the request nor the endpoint
# caps them and the model's context length is unknown.
GATEWAY_BUDGET_RESERVATION_TTL = env.int("GATEWAY_BUDGET_RESERVATION_TTL", default=60)
GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS = env.int("GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS", default=16384)
# Settlements of requests finishing within this many milliseconds are written in one transaction (0: no
# waiting). A released hold keeps counting against its limits until then (docs/budgets.md).
GATEWAY_BUDGET_SETTLE_FLUSH_MS = env.int("GATEWAY_BUDGET_SETTLE_FLUSH_MS", default=20)

# Time limits of upstream calls, in seconds: TCP connect; until the response head / first stream event
# (exceeded: 524 unless another endpoint answers); whole JSON body or gap between stream events.
GATEWAY_UPSTREAM_CONNECT_TIMEOUT = env.float("GATEWAY_UPSTREAM_CONNECT_TIMEOUT", default=10.0)
GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT = env.float("GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT", default=60.0)
GATEWAY_UPSTREAM_READ_TIMEOUT = env.float("GATEWAY_UPSTREAM_READ_TIMEOUT", default=120.0)
# A non-streaming call: from the send until the whole answer was read (providers answer when they are done).
GATEWAY_UPSTREAM_TOTAL_TIMEOUT = env.float("GATEWAY_UPSTREAM_TOTAL_TIMEOUT", default=600.0)
# Which environment variables a catalog provider may name as its platform key (inference/provider_config.py).
GATEWAY_PROVIDER_KEY_ENV_PATTERN = env.str(
    "GATEWAY_PROVIDER_KEY_ENV_PATTERN", default=r"[A-Z][A-Z0-9_]*_(API_KEY|KEY|TOKEN)"
)
# Largest upstream answer read, in bytes: a JSON body, or all the bytes of a stream. Larger answers fail as
# `server` (502, or an error event once streaming) instead of growing the process's memory.
GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES = env.int("GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES", default=32 * 1024 * 1024)

# Generation rows of requests finishing within this many milliseconds are written in one transaction.
GATEWAY_ACCOUNTING_FLUSH_MS = env.int("GATEWAY_ACCOUNTING_FLUSH_MS", default=50)
# The model of the policy version rows (the kernel looks it up by this name, like AUTH_USER_MODEL).
GATEWAY_POLICY_VERSION_MODEL = "accounts.PolicyVersion"
# Without Redis, or while Redis cannot be reached: how old the policy version rows may get before a request
# reads them again (gateway_project/policy_versions.py).
GATEWAY_POLICY_REFRESH_MS = env.int("GATEWAY_POLICY_REFRESH_MS", default=250)
# With Redis: how often the rows are read anyway, in case a push was lost (gateway_project/policy_versions.py).
GATEWAY_POLICY_RECHECK_MS = env.int("GATEWAY_POLICY_RECHECK_MS", default=5000)
# Connect and read timeout of the gateway's own Redis clients (policy pushes, rankings counters).
GATEWAY_REDIS_TIMEOUT_SECONDS = env.float("GATEWAY_REDIS_TIMEOUT_SECONDS", default=1.0)
# Seconds a batch of Generation rows is retried while the database is unreachable (restart, failover).
GATEWAY_ACCOUNTING_RETRY_SECONDS = env.float("GATEWAY_ACCOUNTING_RETRY_SECONDS", default=60.0)

# On SIGTERM, seconds a replica serves with readiness 503 before it stops accepting (gateway_project/draining.py).
GATEWAY_DRAIN_SECONDS = env.float("GATEWAY_DRAIN_SECONDS", default=10.0)
# At shutdown (ASGI lifespan, gateway_project/lifespan.py): how long to wait, after uvicorn's
# --timeout-graceful-shutdown, for cancelled requests to write their accounting.
GATEWAY_SHUTDOWN_DRAIN_SECONDS = env.float("GATEWAY_SHUTDOWN_DRAIN_SECONDS", default=10.0)
# Thresholds of the garbage collector in a serving process (gateway_project/gc_tuning.py; empty: Python's 700,10,10).
GATEWAY_GC_THRESHOLDS = [int(v) for v in env.list("GATEWAY_GC_THRESHOLDS", default=["20000", "20", "20"]) if v]

# GET /health/ready: time limit, in seconds, of each check (database query, Redis PING).
GATEWAY_HEALTH_TIMEOUT_SECONDS = env.float("GATEWAY_HEALTH_TIMEOUT_SECONDS", default=2.0)

# GET /metrics (Prometheus): served to `Authorization: Bearer GATEWAY_METRICS_TOKEN` or to client addresses in
# GATEWAY_METRICS_ALLOWED_CIDRS. Several worker processes: set PROMETHEUS_MULTIPROC_DIR (docs/operations.md).
GATEWAY_METRICS_ENABLED = env.bool("GATEWAY_METRICS_ENABLED", default=True)  # false: data plane not measured
GATEWAY_METRICS_TOKEN = env.str("GATEWAY_METRICS_TOKEN", default="")
GATEWAY_METRICS_ALLOWED_CIDRS = env.list("GATEWAY_METRICS_ALLOWED_CIDRS", default=["127.0.0.1/32", "::1/128"])

# Catalog file loaded by `bootstrap`.
GATEWAY_CATALOG = env.str("GATEWAY_CATALOG", default=str(BASE_DIR / "catalog" / "default.yaml"))

# The data region of this process (global, europe, us); a trusted proxy may set it per request with
# GATEWAY_REGION_HEADER (guardrails/regions.py). The client's Host header never decides it.
GATEWAY_REGION = env.str("GATEWAY_REGION", default="global")
GATEWAY_REGION_HEADER = env.str("GATEWAY_REGION_HEADER", default="")
GATEWAY_TRUSTED_PROXIES = env.list("GATEWAY_TRUSTED_PROXIES", default=[])
GATEWAY_REGION_HOSTS_SET = bool(env.str("GATEWAY_REGION_HOSTS", default=""))  # retired: a startup check refuses it

# Model vendors of the guardrail fields enforce_zdr_vendor_a..d (enforce_zdr_other covers every other vendor).
GATEWAY_ZDR_VENDOR_A = env.str("GATEWAY_ZDR_VENDOR_A", default="openai")
GATEWAY_ZDR_VENDOR_B = env.str("GATEWAY_ZDR_VENDOR_B", default="anthropic")
GATEWAY_ZDR_VENDOR_C = env.str("GATEWAY_ZDR_VENDOR_C", default="google")
GATEWAY_ZDR_VENDOR_D = env.str("GATEWAY_ZDR_VENDOR_D", default="x-ai")

# Regions whose national phone formats the `phone` content filter recognizes (international +CC always).
GATEWAY_GUARDRAIL_PHONE_REGIONS = env.list("GATEWAY_GUARDRAIL_PHONE_REGIONS", default=["US", "GB", "DE", "FR"])

# Fernet keys for BYOK and destination secrets, comma separated; the first one encrypts.
GATEWAY_BYOK_ENCRYPTION_KEYS = env.list("GATEWAY_BYOK_ENCRYPTION_KEYS", default=[])

# Observability (docs/observability.md, "Storage"): each generation's trace is stored once, encrypted with the
# keys above, its JSON cut to this many bytes (the longest request/answer strings first, marked `truncated`);
# a stored trace is deleted when its deliveries are done, and after this many days in any case. The other
# GATEWAY_OBSERVABILITY_* settings are read by the worker (observability/conf.py).
GATEWAY_OBSERVABILITY_MAX_BODY_BYTES = env.int("GATEWAY_OBSERVABILITY_MAX_BODY_BYTES", default=1_048_576)
GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS = env.float("GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS", default=7.0)

# `max_tokens` sent to Anthropic when the request has no `max_output_tokens` (the Messages API requires it).
GATEWAY_ANTHROPIC_MAX_TOKENS = env.int("GATEWAY_ANTHROPIC_MAX_TOKENS", default=4096)

# Rankings dataset: fraction of requests classified for the sampled (category, language_type) dataset.
GATEWAY_RANKINGS_SAMPLE_RATE = env.float("GATEWAY_RANKINGS_SAMPLE_RATE", default=0.1)

# Server tools and plugins (docs/server-tools.md, docs/plugins.md). Web search engines: an engine is configured
# when its URL (SearXNG) or API key (Brave, Tavily) is set. GATEWAY_WEB_SEARCH_ENGINE names the default engine (empty:
# the only configured one); GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES maps workspace ids to an engine (or `none`).
GATEWAY_WEB_SEARCH_ENGINE = env.str("GATEWAY_WEB_SEARCH_ENGINE", default="")
GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES = env.dict("GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES", default={})
GATEWAY_WEB_SEARCH_TIMEOUT = env.float("GATEWAY_WEB_SEARCH_TIMEOUT", default=10.0)
GATEWAY_SEARXNG_URL = env.str("GATEWAY_SEARXNG_URL", default="")
GATEWAY_SEARXNG_API_KEY = env.str("GATEWAY_SEARXNG_API_KEY", default="")
GATEWAY_SEARXNG_PRICE_PER_QUERY = env.str("GATEWAY_SEARXNG_PRICE_PER_QUERY", default="0")
GATEWAY_BRAVE_SEARCH_API_KEY = env.str("GATEWAY_BRAVE_SEARCH_API_KEY", default="")
GATEWAY_BRAVE_SEARCH_URL = env.str("GATEWAY_BRAVE_SEARCH_URL", default="https://api.search.brave.com/res/v1/web/search")
GATEWAY_BRAVE_SEARCH_PRICE_PER_QUERY = env.str("GATEWAY_BRAVE_SEARCH_PRICE_PER_QUERY", default="0")
GATEWAY_TAVILY_API_KEY = env.str("GATEWAY_TAVILY_API_KEY", default="")
GATEWAY_TAVILY_SEARCH_URL = env.str("GATEWAY_TAVILY_SEARCH_URL", default="https://api.tavily.com/search")
GATEWAY_TAVILY_PRICE_PER_QUERY = env.str("GATEWAY_TAVILY_PRICE_PER_QUERY", default="0")
# Web fetch (service:web_fetch, the web-fetch plugin): never a private, loopback or link-local address, unless
# its host or a CIDR holding it is listed here (GATEWAY_ALLOW_PRIVATE_URLS does not apply to it).
GATEWAY_WEB_FETCH_ALLOWLIST = env.list("GATEWAY_WEB_FETCH_ALLOWLIST", default=[])
GATEWAY_WEB_FETCH_TIMEOUT = env.float("GATEWAY_WEB_FETCH_TIMEOUT", default=10.0)
GATEWAY_WEB_FETCH_MAX_BYTES = env.int("GATEWAY_WEB_FETCH_MAX_BYTES", default=2 * 1024 * 1024)
GATEWAY_WEB_FETCH_MAX_CHARS = env.int("GATEWAY_WEB_FETCH_MAX_CHARS", default=20_000)
GATEWAY_WEB_FETCH_MAX_REDIRECTS = env.int("GATEWAY_WEB_FETCH_MAX_REDIRECTS", default=5)
# The file-parser plugin: at most this many pages of a PDF are turned into text (a request may ask for fewer).
GATEWAY_FILE_PARSER_MAX_PAGES = env.int("GATEWAY_FILE_PARSER_MAX_PAGES", default=100)
# The context-compression plugin measures prompts as UTF-8 bytes / this (1: no tokenizer makes more tokens than
# bytes, so a compressed prompt always fits; about 3-4 for English text makes it cut only what it must, but a
# prompt measured too small can still be refused by the provider, which then falls back to the next endpoint).
GATEWAY_CONTEXT_COMPRESSION_BYTES_PER_TOKEN = env.float("GATEWAY_CONTEXT_COMPRESSION_BYTES_PER_TOKEN", default=1.0)
# The moderation plugin's moderation model (catalog slug, output modality `moderation`); empty: the catalog's first
# moderation model by slug, or none (built-in detectors only).
GATEWAY_MODERATION_MODEL = env.str("GATEWAY_MODERATION_MODEL", default="")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("GATEWAY_LOG_LEVEL", default="INFO")},
    "loggers": {"django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False}},
}
