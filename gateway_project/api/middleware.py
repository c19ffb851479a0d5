"""Django middleware that keeps every failure under /api/ in the error envelope.

DRF views already answer with the envelope (gateway_project.api.errors). This middleware covers what
happens outside them: a NUL character in the path or a query parameter (400 naming it, before any view
can pass it to the database, which refuses it), unknown paths (404), bodies over GATEWAY_MAX_BODY_BYTES
(413, checked before the body is read), the database being unreachable (503 with Retry-After), unhandled
exceptions (500, logged, no traceback in the body) and any other non-JSON error response Django itself
produces.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from gateway_project.api.errors import GatewayError, database_unavailable, error_envelope
from gateway_project.json_input import NUL, check_text

logger = logging.getLogger("gateway.errors")

API_PREFIX = "/api/"
SCIM_CONTENT_TYPE = "application/scim+json"


def envelope_response(error: GatewayError) -> JsonResponse:
    """A JsonResponse carrying `error` in the envelope, with its extra headers."""
    response = JsonResponse(error.envelope(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


class ErrorEnvelopeMiddleware:
    """Outermost Django middleware of the management plane."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if NUL in request.path or "%00" in query or NUL in query:
            try:
                self._check_nul(request)
            except GatewayError as error:
                return envelope_response(error)
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        too_big = self._content_length(request) > settings.GATEWAY_MAX_BODY_BYTES
        if too_big:
            return envelope_response(GatewayError(413))
        response = self.get_response(request)
        if response.status_code >= 400 and not self._is_json(response):
            return envelope_response(GatewayError(response.status_code))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, GatewayError):
            return envelope_response(exception)
        if isinstance(exception, RequestDataTooBig):
            return envelope_response(GatewayError(413))
        unavailable = database_unavailable(exception)
        if unavailable is not None:
            return envelope_response(unavailable)
        logger.exception("Unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return envelope_response(GatewayError(500))

    @staticmethod
    def _check_nul(request: HttpRequest) -> None:
        check_text("path", request.path)
        for name, values in request.GET.lists():
            check_text("query", name)
            for value in values:
                check_text(name, value)

    @staticmethod
    def _content_length(request: HttpRequest) -> int:
        try:
            return int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return 0

    @staticmethod
    def _is_json(response: HttpResponse) -> bool:
        content_type = response.get("Content-Type", "")
        if content_type.startswith(SCIM_CONTENT_TYPE):
            return True
        if not content_type.startswith("application/json"):
            return False
        if getattr(response, "streaming", False):
            return True
        try:
            return "error" in json.loads(response.content or b"{}")
        except ValueError:
            return False


def not_found_view(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler404: unknown paths answer in the envelope."""
    return JsonResponse(error_envelope(404), status=404)


def server_error_view(request: HttpRequest) -> JsonResponse:
    """handler500: unhandled errors answer in the envelope, without a traceback."""
    return JsonResponse(error_envelope(500), status=500)
