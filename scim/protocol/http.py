"""The SCIM side of HTTP: `application/scim+json` bodies, SCIM error responses (RFC 7644 §3.12),
management-key authentication, and the base view every SCIM endpoint derives from."""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from scim2_models import (
    Context,
    Error,
    ForbiddenException,
    InvalidSyntaxException,
    NotFoundException,
    SCIMException,
    ScimPolicy,
    UnauthorizedException,
)

from accounts import authentication
from accounts.principal import Principal, authenticate_header
from gateway_project import json_input
from gateway_project.api.errors import GatewayError
from gateway_project.api.permissions import MANAGEMENT_ONLY

logger = logging.getLogger("gateway.scim")

SCIM_CONTENT_TYPE = "application/scim+json"

# Strict RFC 7643/7644 reading, with the two tolerances Microsoft Entra ID needs: a PATCH `remove` whose
# `value` selects the entries to remove, and an `add`/`replace` through a path filter that matches no entry
# yet (`emails[type eq "work"].value`) creating that entry.
SERVER_POLICY = ScimPolicy(
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


def scim_response(payload: dict[str, Any] | None, status: int = 200, headers: dict | None = None) -> HttpResponse:
    if payload is None:
        response = HttpResponse(status=status)
    else:
        response = HttpResponse(json.dumps(payload), status=status, content_type=SCIM_CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def error_response(error: Error) -> HttpResponse:
    """A SCIM Error message: `status` as a string, `scimType` when the failure has one."""
    body = error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    response = scim_response(body, status=int(error.status))
    if int(error.status) == 401:
        response["WWW-Authenticate"] = 'Bearer realm="scim"'
    return response


def exception_response(exc: Exception) -> HttpResponse:
    """Any failure of a SCIM view as a SCIM Error."""
    if isinstance(exc, SCIMException):
        return error_response(exc.to_error())
    if isinstance(exc, pydantic.ValidationError):
        errors = Error.from_validation_errors(exc.errors())
        return error_response(errors[0] if errors else Error(status=400, scim_type="invalidValue"))
    if isinstance(exc, GatewayError):
        response = error_response(Error(status=exc.status, detail=exc.message))
        for name, value in exc.headers.items():  # e.g. Retry-After of a 429
            response[name] = value
        return response
    logger.exception("Unhandled error in a SCIM view", exc_info=exc)
    return error_response(Error(status=500, detail="Internal Server Error"))


def scim_base_url(request: HttpRequest) -> str:
    """The absolute base of the SCIM service, e.g. https://host/api/v1/scim/v2 (no trailing slash)."""
    return request.build_absolute_uri(reverse("scim-v2-root")).rstrip("/")


@method_decorator(csrf_exempt, name="dispatch")
class ScimView(View):
    """A SCIM endpoint: authenticated by a management key; every failure answered as a SCIM Error."""

    http_method_names = ["get", "post", "put", "patch", "delete"]

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            self.principal = request.user = self._authenticate(request)  # request.user: the audit log's actor
            self.base_url = scim_base_url(request)
            with SERVER_POLICY:
                return super().dispatch(request, *args, **kwargs)
        except Exception as exc:  # every failure becomes a SCIM Error
            return exception_response(exc)

    @staticmethod
    def _authenticate(request: HttpRequest) -> Principal:
        try:
            principal = authenticate_header(
                request.META.get("HTTP_AUTHORIZATION"), request.META.get("REMOTE_ADDR") or ""
            )
        except GatewayError as exc:
            if exc.status == 429:  # an address flooding unknown keys (accounts/auth_throttle.py)
                raise
            raise UnauthorizedException(detail=exc.message) from None
        if not principal.is_management:
            raise ForbiddenException(detail=MANAGEMENT_ONLY)
        authentication.touch_last_used(principal)  # looked up per call (tests patch it)
        return principal

    def http_method_not_allowed(self, request, *args, **kwargs) -> HttpResponse:
        return error_response(Error(status=405, detail=f"Method {request.method} is not allowed on this endpoint"))

    def body(self) -> dict[str, Any]:
        """The JSON object of the request body (400 invalidSyntax otherwise)."""
        try:
            data = json_input.loads(self.request.body or b"null")
        except GatewayError as error:  # malformed, nested too deeply or carrying a NUL character
            raise InvalidSyntaxException(detail=f"The request body is not valid: {error.message}") from None
        if not isinstance(data, dict):
            raise InvalidSyntaxException(detail="The request body must be a JSON object")
        return data


class NotFoundView(ScimView):
    """Any other path under the SCIM base: 404 as a SCIM Error."""

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return exception_response(NotFoundException(detail=f"{request.path} is not a SCIM endpoint"))
