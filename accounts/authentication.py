"""Bearer API-key authentication for the management plane (DRF): REST_FRAMEWORK's
DEFAULT_AUTHENTICATION_CLASSES names `accounts.authentication.ApiKeyAuthentication` (the kernel's API code
only sees the `Principal` it puts in request.user)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from accounts.models import ApiKey
from accounts.principal import Principal, authenticate_header

LAST_USED_RESOLUTION_SECONDS = 60


def touch_last_used(principal: Principal) -> None:
    """Record that a key was used, at most once a minute per key (a plain UPDATE, no policy-version bump)."""
    now = timezone.now()
    cutoff = now - timezone.timedelta(seconds=LAST_USED_RESOLUTION_SECONDS)
    ApiKey.objects.filter(pk=principal.key_id).exclude(last_used_at__gt=cutoff).update(last_used_at=now)


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>` → request.user is a `Principal`, request.auth the key hash."""

    def authenticate(self, request):
        principal = authenticate_header(request.META.get("HTTP_AUTHORIZATION"), request.META.get("REMOTE_ADDR") or "")
        touch_last_used(principal)
        return principal, principal.key_hash

    def authenticate_header(self, request) -> str:
        return "Bearer"


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents `Authorization: Bearer <API key>` for drf-spectacular (registered by being defined)."""

    target_class = ApiKeyAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key of the organization"}
