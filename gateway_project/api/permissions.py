"""Permissions of the management plane."""

from rest_framework.permissions import BasePermission

from gateway_project.api.errors import GatewayError
from gateway_project.pipeline import Principal

MANAGEMENT_ONLY = "Only management keys can perform this operation"


class IsManagementKey(BasePermission):
    """Admin endpoints: a management key of the organization; an inference key gets 403."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, Principal):
            raise GatewayError(401)
        if not principal.is_management:
            raise GatewayError(403, MANAGEMENT_ONLY)
        return True


class IsAnyKey(BasePermission):
    """Endpoints open to any valid key (inference or management), such as GET /key and the datasets."""

    def has_permission(self, request, view) -> bool:
        if not isinstance(request.user, Principal):
            raise GatewayError(401)
        return True
