"""Management endpoints of the scim app: /scim/group-mappings and /scim/groups (gateway envelope).

The SCIM 2.0 protocol endpoints themselves live in scim.protocol (application/scim+json)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from gateway_project.api.errors import validation_error
from gateway_project.api.serializers import DeletedSerializer, data_envelope
from gateway_project.api.viewsets import OrganizationViewSet
from scim import selectors, services
from scim.models import GroupMapping, ScimGroup
from scim.serializers import (
    GroupMappingCreateSerializer,
    GroupMappingListQuerySerializer,
    GroupMappingSerializer,
    GroupMappingUpdateSerializer,
    ScimGroupSerializer,
)

GroupMappingData = data_envelope(GroupMappingSerializer, "ScimGroupMappingData")
ScimGroupData = data_envelope(ScimGroupSerializer, "ScimGroupData")

KEEP_MEMBERS = OpenApiParameter(
    "keep_members",
    str,
    enum=["true", "false"],
    required=True,
    description="false removes the workspace memberships this mapping granted (unless another mapping or a "
    "manual membership holds them); true leaves them as they are.",
)


@extend_schema(tags=["scim"])
class GroupMappingViewSet(OrganizationViewSet):
    """SCIM group → workspace role mappings."""

    queryset = GroupMapping.objects.all()
    serializer_class = GroupMappingSerializer

    @extend_schema(parameters=[GroupMappingListQuerySerializer], responses={200: GroupMappingSerializer(many=True)})
    def list(self, request):
        query = self.validated(GroupMappingListQuerySerializer, data=request.query_params)
        queryset = self.get_queryset()
        if "scim_group_id" in query:
            queryset = queryset.filter(group_id=query["scim_group_id"])
        if "workspace_id" in query:
            queryset = queryset.filter(workspace_id=query["workspace_id"])
        return self.list_response(queryset)

    @extend_schema(responses={200: GroupMappingData})
    def retrieve(self, request, pk=None):
        return self.data_response(GroupMappingSerializer(self.get_object()).data)

    @extend_schema(request=GroupMappingCreateSerializer, responses={201: GroupMappingData, 409: None})
    def create(self, request):
        data = self.validated(GroupMappingCreateSerializer)
        mapping = services.group_mapping_create(organization_id=self.principal.organization_id, **data)
        return self.data_response(GroupMappingSerializer(mapping).data, created=True)

    @extend_schema(request=GroupMappingUpdateSerializer, responses={200: GroupMappingData})
    def partial_update(self, request, pk=None):
        data = self.validated(GroupMappingUpdateSerializer)
        mapping = services.group_mapping_update(mapping=self.get_object(), role=data["role"])
        return self.data_response(GroupMappingSerializer(mapping).data)

    @extend_schema(parameters=[KEEP_MEMBERS], responses={200: DeletedSerializer})
    def destroy(self, request, pk=None):
        mapping = self.get_object()
        keep = request.query_params.get("keep_members")
        if keep not in ("true", "false"):
            raise validation_error("keep_members", "required, true or false")
        services.group_mapping_delete(mapping=mapping, keep_members=keep == "true")
        return self.deleted_response()


@extend_schema(tags=["scim"])
class ScimGroupViewSet(OrganizationViewSet):
    """Groups the identity provider pushed (read-only here; they change through SCIM)."""

    queryset = ScimGroup.objects.all()
    serializer_class = ScimGroupSerializer

    def get_queryset(self):
        return selectors.scim_groups(organization_id=self.principal.organization_id)

    @extend_schema(
        parameters=[
            OpenApiParameter("display_name", str, description="Exact match; omitted or empty: no filter"),
            OpenApiParameter("external_id", str, description="Exact match; omitted or empty: no filter"),
        ],
        responses={200: ScimGroupSerializer(many=True)},
    )
    def list(self, request):
        queryset = self.get_queryset()
        for name in ("display_name", "external_id"):
            if request.query_params.get(name):
                queryset = queryset.filter(**{name: request.query_params[name]})
        return self.list_response(queryset)

    @extend_schema(responses={200: ScimGroupData})
    def retrieve(self, request, pk=None):
        return self.data_response(ScimGroupSerializer(self.get_object()).data)
