"""Endpoints of the observability app: /observability/destinations."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from accounts.models import Organization
from gateway_project.api.serializers import DeletedSerializer, data_envelope
from gateway_project.api.viewsets import OrganizationViewSet
from observability import services
from observability.models import Destination
from observability.selectors import destination_get, destination_list
from observability.serializers import (
    DestinationCreateSerializer,
    DestinationSerializer,
    DestinationUpdateSerializer,
)

DestinationData = data_envelope(DestinationSerializer, "DestinationData")


class DestinationViewSet(OrganizationViewSet):
    """Observability destinations of the organization (management key)."""

    queryset = Destination.objects.filter(deleted_at__isnull=True)
    serializer_class = DestinationSerializer
    lookup_value_regex = "[^/]+"

    def get_object(self) -> Destination:
        return destination_get(organization_id=self.principal.organization_id, destination_id=self.kwargs["pk"])

    @extend_schema(
        parameters=[OpenApiParameter("workspace_id", str, description="Only this workspace (uuid or slug)")],
        responses={200: DestinationSerializer(many=True)},
    )
    def list(self, request):
        queryset = destination_list(
            organization_id=self.principal.organization_id, workspace_id=request.query_params.get("workspace_id")
        )
        return self.list_response(queryset)

    @extend_schema(request=DestinationCreateSerializer, responses={201: DestinationData})
    def create(self, request):
        data = self.validated(DestinationCreateSerializer)
        organization = Organization.objects.select_related("default_workspace").get(pk=self.principal.organization_id)
        destination = services.destination_create(organization=organization, data=data)
        return self.data_response(DestinationSerializer(destination).data, created=True)

    @extend_schema(responses={200: DestinationData})
    def retrieve(self, request, pk=None):
        return self.data_response(DestinationSerializer(self.get_object()).data)

    @extend_schema(request=DestinationUpdateSerializer, responses={200: DestinationData})
    def partial_update(self, request, pk=None):
        destination = self.get_object()
        data = self.validated(DestinationUpdateSerializer, partial=True)
        destination = services.destination_update(destination=destination, data=data)
        return self.data_response(DestinationSerializer(destination).data)

    @extend_schema(responses={200: DeletedSerializer})
    def destroy(self, request, pk=None):
        services.destination_delete(destination=self.get_object())
        return self.deleted_response()
