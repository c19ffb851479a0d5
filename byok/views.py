"""Endpoints of the byok app: /byok and /byok/{id} (management key)."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from accounts.models import Organization, Workspace
from accounts.selectors import workspace_get
from byok import services
from byok.models import ProviderCredential
from byok.selectors import provider_credential_list
from byok.serializers import (
    ProviderCredentialCreateSerializer,
    ProviderCredentialSerializer,
    ProviderCredentialUpdateSerializer,
)
from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.api.serializers import DeletedSerializer, data_envelope
from gateway_project.api.viewsets import OrganizationViewSet

ProviderCredentialData = data_envelope(ProviderCredentialSerializer, "ProviderCredentialData")


class ProviderCredentialViewSet(OrganizationViewSet):
    """BYOK provider credentials of the organization."""

    queryset = ProviderCredential.objects.all()
    serializer_class = ProviderCredentialSerializer
    lookup_value_regex = "[^/]+"

    def get_object(self) -> ProviderCredential:
        try:
            credential_id = uuid.UUID(str(self.kwargs["pk"]))
        except ValueError:
            raise GatewayError(404, "BYOK credential not found") from None
        credential = self.get_queryset().filter(pk=credential_id).first()
        if credential is None:
            raise GatewayError(404, "BYOK credential not found")
        return credential

    def _body_workspace(self, organization: Organization, data: dict) -> Workspace | None:
        """The workspace of a new credential: the named one, none (null: every workspace), or the default."""
        if "workspace_id" in data:
            if data["workspace_id"] is None:
                return None
            try:
                return workspace_get(organization_id=organization.id, id_or_slug=data["workspace_id"])
            except GatewayError:
                raise validation_error("workspace_id", "unknown workspace") from None
        if organization.default_workspace_id is None:
            raise validation_error("workspace_id", "required: the organization has no default workspace")
        return organization.default_workspace

    @extend_schema(
        parameters=[
            OpenApiParameter("workspace_id", OpenApiTypes.STR, description="Workspace uuid or slug"),
            OpenApiParameter("provider", OpenApiTypes.STR, description="Provider slug"),
        ],
        responses={200: ProviderCredentialSerializer(many=True)},
    )
    def list(self, request):
        workspace_id = None
        if request.query_params.get("workspace_id"):
            workspace_id = workspace_get(
                organization_id=self.principal.organization_id, id_or_slug=request.query_params["workspace_id"]
            ).id
        queryset = provider_credential_list(
            organization_id=self.principal.organization_id,
            workspace_id=workspace_id,
            provider=request.query_params.get("provider") or None,
        )
        return self.list_response(queryset)

    @extend_schema(request=ProviderCredentialCreateSerializer, responses={201: ProviderCredentialData})
    def create(self, request):
        data = dict(self.validated(ProviderCredentialCreateSerializer))
        organization = Organization.objects.select_related("default_workspace").get(pk=self.principal.organization_id)
        credential = services.provider_credential_create(
            organization=organization,
            provider=data.pop("provider"),
            raw_key=data.pop("key"),
            workspace=self._body_workspace(organization, data),
            **{k: v for k, v in data.items() if k != "workspace_id"},
        )
        return self.data_response(ProviderCredentialSerializer(credential).data, created=True)

    @extend_schema(responses={200: ProviderCredentialData})
    def retrieve(self, request, pk=None):
        return self.data_response(ProviderCredentialSerializer(self.get_object()).data)

    @extend_schema(request=ProviderCredentialUpdateSerializer, responses={200: ProviderCredentialData})
    def partial_update(self, request, pk=None):
        credential = self.get_object()
        data = dict(self.validated(ProviderCredentialUpdateSerializer, partial=True))
        raw_key = data.pop("key", None)
        credential = services.provider_credential_update(credential=credential, data=data, raw_key=raw_key)
        return self.data_response(ProviderCredentialSerializer(credential).data)

    @extend_schema(responses={200: DeletedSerializer})
    def destroy(self, request, pk=None):
        services.provider_credential_delete(credential=self.get_object())
        return self.deleted_response()
