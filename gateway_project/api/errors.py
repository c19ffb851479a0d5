"""The one error type of the gateway and the one envelope every failure is written in.

`GatewayError` is raised by services, selectors, middleware and views of both planes. The DRF exception
handler below and the data plane's consumer both turn it into
`{"error": {"code", "message", "metadata"?}, "service_metadata"?, "user_id"?}` with `code` equal to the
HTTP status (DECISIONS.md §1).
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger("gateway.errors")

DEFAULT_MESSAGES: dict[int, str] = {
    400: "Invalid request parameters",
    401: "Missing Authentication header",
    402: "Insufficient credits or quota",
    403: "Only management keys can perform this operation",
    404: "Resource not found",
    405: "Method not allowed",
    408: "Request timed out",
    409: "Resource conflict",
    413: "Request payload too large",
    415: "Unsupported media type",
    422: "Unprocessable request",
    429: "Rate limit exceeded",
    500: "Internal Server Error",
    502: "Provider returned error",
    503: "Service temporarily unavailable",
    524: "Provider request timed out",
    529: "Provider temporarily overloaded",
}


class GatewayError(Exception):
    """A failure with an HTTP status, a message for the client and optional metadata.

    `headers` are added to the HTTP response (for example `Retry-After`); `service_metadata` and `user_id`
    are the optional members of the envelope.
    """

    def __init__(
        self,
        status: int,
        message: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        service_metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> None:
        self.status = status
        self.message = message or DEFAULT_MESSAGES.get(status, "Error")
        self.metadata = metadata
        self.headers = headers or {}
        self.service_metadata = service_metadata
        self.user_id = user_id
        super().__init__(self.message)

    def envelope(self) -> dict[str, Any]:
        """The JSON body of this error."""
        return error_envelope(
            self.status,
            self.message,
            metadata=self.metadata,
            service_metadata=self.service_metadata,
            user_id=self.user_id,
        )


def error_envelope(
    status: int,
    message: str | None = None,
    *,
    metadata: dict[str, Any] | None = None,
    service_metadata: dict[str, Any] | None = None,
    user_id: str | None = None,
) -> dict[str, Any]:
    """Build the error envelope; optional members are left out when they are None."""
    error: dict[str, Any] = {"code": status, "message": message or DEFAULT_MESSAGES.get(status, "Error")}
    if metadata is not None:
        error["metadata"] = metadata
    body: dict[str, Any] = {"error": error}
    if service_metadata is not None:
        body["service_metadata"] = service_metadata
    if user_id is not None:
        body["user_id"] = user_id
    return body


# The database is unreachable or the connection broke (server restart, failover, network): a transient
# condition the client should retry, not a bug. DataError, IntegrityError... stay 500/4xx as before.
DATABASE_UNAVAILABLE_ERRORS = (OperationalError, InterfaceError)
DATABASE_RETRY_AFTER_SECONDS = 2


def _is_redis_error(exc: BaseException) -> bool:
    try:
        import redis
    except ImportError:  # pragma: no cover - redis is a dependency
        return False
    return isinstance(exc, redis.RedisError)


def database_unavailable(exc: BaseException) -> GatewayError | None:
    """503 with `Retry-After` when `exc` says the database (or Redis) cannot be reached right now, else None.

    Redis is an accelerator: code that uses it falls back to the database; a Redis error that still reaches
    a handler is a transient 503, never a 500."""
    if _is_redis_error(exc):
        logger.warning("redis unavailable: %s: %s", type(exc).__name__, exc)
        return GatewayError(
            503,
            "Service temporarily unavailable: a shared cache cannot be reached, retry shortly",
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    if not isinstance(exc, DATABASE_UNAVAILABLE_ERRORS):
        return None
    logger.warning("database unavailable: %s: %s", type(exc).__name__, str(exc).strip().splitlines()[:1])
    return GatewayError(
        503,
        "Service temporarily unavailable: the database cannot be reached, retry shortly",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
    )


def validation_error(field: str, message: str) -> GatewayError:
    """A 400 that names the offending field, in the message and in `metadata.field`."""
    return GatewayError(400, f"{field}: {message}", metadata={"field": field})


def _first_field_error(detail: Any, prefix: str = "") -> tuple[str, str]:
    """Walk DRF's nested error detail to the first (field path, message)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = str(key)
            path = prefix if name in ("non_field_errors", "__all__") else (f"{prefix}.{name}" if prefix else name)
            return _first_field_error(value, path)
    if isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                if value:
                    nested_prefix = f"{prefix}[{index}]" if isinstance(value, dict) else prefix
                    return _first_field_error(value, nested_prefix)
                continue
            return prefix, str(value)
    return prefix, str(detail)


def _flatten_errors(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {str(k): _flatten_errors(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [_flatten_errors(v) for v in detail]
    return str(detail)


def _from_drf(exc: drf_exceptions.APIException) -> GatewayError:
    status = exc.status_code
    headers: dict[str, str] = {}
    if isinstance(exc, drf_exceptions.ValidationError):
        field, message = _first_field_error(exc.detail)
        text = f"{field}: {message}" if field else message
        return GatewayError(400, text, metadata={"field": field or None, "errors": _flatten_errors(exc.detail)})
    if isinstance(exc, drf_exceptions.ParseError):
        return GatewayError(400, f"Malformed JSON body: {exc.detail}")
    if isinstance(exc, drf_exceptions.NotAuthenticated):
        return GatewayError(401, DEFAULT_MESSAGES[401])
    if isinstance(exc, drf_exceptions.AuthenticationFailed):
        return GatewayError(401, str(exc.detail))
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return GatewayError(403, str(exc.detail))
    if isinstance(exc, drf_exceptions.NotFound):
        return GatewayError(404, DEFAULT_MESSAGES[404])
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return GatewayError(405, f"Method {exc.detail}".replace('Method Method "', 'Method "'))
    if isinstance(exc, drf_exceptions.Throttled):
        wait = int(exc.wait or 1)
        headers["Retry-After"] = str(max(wait, 1))
        return GatewayError(429, DEFAULT_MESSAGES[429], headers=headers)
    return GatewayError(status, str(exc.detail))


def drf_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]: every management-plane failure in the envelope."""
    if isinstance(exc, GatewayError):
        error = exc
    elif isinstance(exc, drf_exceptions.APIException):
        error = _from_drf(exc)
    elif isinstance(exc, Http404):
        error = GatewayError(404)
    elif isinstance(exc, PermissionDenied):
        error = GatewayError(403)
    elif isinstance(exc, RequestDataTooBig):
        error = GatewayError(413)
    elif (unavailable := database_unavailable(exc)) is not None:
        error = unavailable
    else:
        view = context.get("view")
        logger.exception("Unhandled error in %s", type(view).__name__ if view else "view", exc_info=exc)
        error = GatewayError(500)
    response = Response(error.envelope(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response
