"""The 17 destination types and the `config` each takes (DECISIONS.md §5).

Every type also takes `headers` (a string map). Secret values (keys, passwords, tokens, every header value)
are encrypted at rest and masked in responses. `webhook` additionally takes `secret`, the HMAC-SHA256
signing key of its signature header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gateway_project.netguard import url_problem


class DestinationType:
    WEBHOOK = "webhook"
    OTEL_COLLECTOR = "otel-collector"
    LANGFUSE = "langfuse"
    ARIZE = "arize"
    BRAINTRUST = "braintrust"
    CLICKHOUSE = "clickhouse"
    DATADOG = "datadog"
    GRAFANA = "grafana"
    LANGSMITH = "langsmith"
    NEWRELIC = "newrelic"
    OPIK = "opik"
    POSTHOG = "posthog"
    RAMP = "ramp"
    S3 = "s3"
    SENTRY = "sentry"
    SNOWFLAKE = "snowflake"
    WEAVE = "weave"


@dataclass(frozen=True)
class TypeSpec:
    """Config keys of one type: required, optional, which are secret, which are URLs, enumerations."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    secrets: frozenset[str] = frozenset()
    urls: frozenset[str] = frozenset()
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.required, *self.optional, "headers")


def _spec(required, optional=(), secrets=(), urls=(), choices=None) -> TypeSpec:
    return TypeSpec(tuple(required), tuple(optional), frozenset(secrets), frozenset(urls), choices or {})


TYPE_SPECS: dict[str, TypeSpec] = {
    "webhook": _spec(["url"], ["method", "secret"], ["secret"], ["url"], {"method": ("POST", "PUT")}),
    "otel-collector": _spec(["endpoint"], [], [], ["endpoint"]),
    "langfuse": _spec(["publicKey", "secretKey"], ["baseUrl"], ["secretKey"], ["baseUrl"]),
    "arize": _spec(["apiKey", "spaceKey", "modelId"], ["baseUrl"], ["apiKey"], ["baseUrl"]),
    "braintrust": _spec(["apiKey", "projectId"], ["baseUrl"], ["apiKey"], ["baseUrl"]),
    "clickhouse": _spec(["host", "database", "username", "password"], ["table"], ["password"], ["host"]),
    "datadog": _spec(["apiKey", "mlApp"], ["url"], ["apiKey"], ["url"]),
    "grafana": _spec(["apiKey", "instanceId"], ["baseUrl"], ["apiKey"], ["baseUrl"]),
    "langsmith": _spec(["apiKey"], ["project", "endpoint", "workspaceId"], ["apiKey"], ["endpoint"]),
    "newrelic": _spec(["licenseKey"], ["region"], ["licenseKey"], [], {"region": ("us", "eu")}),
    "opik": _spec(["apiKey", "workspace", "projectName"], [], ["apiKey"]),
    "posthog": _spec(["apiKey"], ["endpoint"], ["apiKey"], ["endpoint"]),
    "ramp": _spec(["apiKey"], ["baseUrl"], ["apiKey"], ["baseUrl"]),
    "s3": _spec(
        ["accessKeyId", "secretAccessKey", "bucketName"],
        ["region", "endpoint", "sessionToken", "prefix", "pathTemplate"],
        ["secretAccessKey", "sessionToken"],
        ["endpoint"],
    ),
    "sentry": _spec(["dsn", "otlpEndpoint"], [], ["dsn"], ["dsn", "otlpEndpoint"]),
    "snowflake": _spec(["account", "token"], ["database", "schema", "warehouse", "table"], ["token"]),
    "weave": _spec(["apiKey", "entity", "project"], ["baseUrl"], ["apiKey"], ["baseUrl"]),
}

TYPE_CHOICES: tuple[str, ...] = tuple(TYPE_SPECS)

MAX_CONFIG_VALUE_LENGTH = 4096
SNOWFLAKE_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
MAX_HEADERS = 32


def is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in value


def validate_config(type_: str, config: dict, *, partial: bool = False) -> list[tuple[str, str]]:
    """Problems of `config` for `type_` as (field path, message); empty when valid.

    With `partial`, required keys may be absent (PATCH: absent keys keep their stored value).
    """
    spec = TYPE_SPECS[type_]
    problems: list[tuple[str, str]] = []
    for key in config:
        if key not in spec.keys:
            allowed = ", ".join(spec.keys)
            problems.append((f"config.{key}", f"unknown key for type '{type_}' (allowed: {allowed})"))
    if not partial:
        for key in spec.required:
            if config.get(key) in (None, ""):
                problems.append((f"config.{key}", f"is required for type '{type_}'"))
    for key, value in config.items():
        if key == "headers" or key not in spec.keys:
            continue
        path = f"config.{key}"
        if value is None and key not in spec.required:
            continue
        if not isinstance(value, str):
            problems.append((path, "must be a string"))
            continue
        if len(value) > MAX_CONFIG_VALUE_LENGTH:
            problems.append((path, f"must be at most {MAX_CONFIG_VALUE_LENGTH} characters"))
        elif key in spec.required and not value.strip():
            problems.append((path, "must not be empty"))
        elif key in spec.urls and not is_http_url(value):
            problems.append((path, "must be an http(s) URL"))
        elif key in spec.urls and (problem := url_problem(value)):
            problems.append((path, problem))
        elif key in spec.choices and value not in spec.choices[key]:
            problems.append((path, f"must be one of {', '.join(spec.choices[key])}"))
    if "headers" in config:
        problems.extend(_validate_headers(config["headers"]))
    account = config.get("account")
    if type_ == "snowflake" and isinstance(account, str) and account and not SNOWFLAKE_ACCOUNT.match(account):
        problems.append(("config.account", "must be a Snowflake account identifier (letters, digits, '-', '_', '.')"))
    if type_ == "s3" and isinstance(config.get("pathTemplate"), str) and not problems:
        from observability.senders.s3 import template_problem

        problem = template_problem(config["pathTemplate"])
        if problem:
            problems.append(("config.pathTemplate", problem))
    return problems


def _validate_headers(headers) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if not isinstance(headers, dict):
        return [("config.headers", "must be an object of string values")]
    if len(headers) > MAX_HEADERS:
        return [("config.headers", f"at most {MAX_HEADERS} headers")]
    for name, value in headers.items():
        if not name or any(c in name for c in " :\r\n\t") or not name.isascii():
            return [("config.headers", f"invalid header name '{name}'")]
        if not isinstance(value, str) or "\r" in value or "\n" in value:
            return [(f"config.headers.{name}", "must be a string without line breaks")]
    return []
