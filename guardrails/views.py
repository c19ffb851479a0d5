"""Endpoints of the guardrails app: /guardrails, its assignments, and the organization-wide assignment lists."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.models import Organization, Workspace
from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.api.serializers import (
    AssignedCountSerializer,
    DeletedSerializer,
    UnassignedCountSerializer,
    data_envelope,
)
from gateway_project.api.viewsets import OrganizationViewSet
from guardrails import selectors, services
from guardrails.models import Guardrail
from guardrails.serializers import (
    GuardrailSerializer,
    GuardrailUpdateSerializer,
    GuardrailWriteSerializer,
    KeyAssignmentSerializer,
    KeyHashesSerializer,
    MemberAssignmentSerializer,
    MemberUserIdsSerializer,
)

GuardrailData = data_envelope(GuardrailSerializer, "GuardrailData")
UUID_REGEX = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
WORKSPACE_PARAM = OpenApiParameter("workspace_id", str, description="Only guardrails of this workspace (uuid)")


class GuardrailViewSet(OrganizationViewSet):
    """Guardrails of the organization and their key and member assignments."""

    queryset = Guardrail.objects.select_related("workspace")
    serializer_class = GuardrailSerializer
    lookup_value_regex = UUID_REGEX

    def _workspace_filter(self) -> Workspace | None:
        raw = self.request.query_params.get("workspace_id")
        if not raw:
            return None
        try:
            workspace_id = uuid.UUID(raw)
        except ValueError:
            raise validation_error("workspace_id", "must be a uuid") from None
        workspace = Workspace.objects.filter(organization_id=self.principal.organization_id, id=workspace_id).first()
        if workspace is None:
            raise validation_error("workspace_id", f"unknown workspace '{raw}'")
        return workspace

    @extend_schema(parameters=[WORKSPACE_PARAM], responses={200: GuardrailSerializer(many=True)})
    def list(self, request):
        queryset = selectors.guardrail_list(
            organization_id=self.principal.organization_id, workspace=self._workspace_filter()
        )
        return self.list_response(queryset)

    @extend_schema(request=GuardrailWriteSerializer, responses={201: GuardrailData})
    def create(self, request):
        data = self.validated(GuardrailWriteSerializer)
        organization = Organization.objects.select_related("default_workspace").get(pk=self.principal.organization_id)
        guardrail = services.guardrail_create(organization=organization, data=data)
        return self.data_response(GuardrailSerializer(guardrail).data, created=True)

    @extend_schema(responses={200: GuardrailData})
    def retrieve(self, request, pk=None):
        return self.data_response(GuardrailSerializer(self.get_object()).data)

    @extend_schema(request=GuardrailUpdateSerializer, responses={200: GuardrailData})
    def partial_update(self, request, pk=None):
        data = self.validated(GuardrailUpdateSerializer, partial=True)
        guardrail = self.get_queryset().filter(pk=pk).first()
        if guardrail is not None and not guardrail.is_default:
            guardrail = services.guardrail_update(guardrail=guardrail, data=data)
        else:
            workspace = selectors.workspace_of_default_guardrail(
                organization_id=self.principal.organization_id, guardrail_id=uuid.UUID(pk)
            )
            if workspace is None:
                raise GatewayError(404)
            guardrail = services.default_guardrail_update(workspace=workspace, data=data)
        return self.data_response(GuardrailSerializer(guardrail).data)

    @extend_schema(responses={200: DeletedSerializer})
    def destroy(self, request, pk=None):
        services.guardrail_delete(guardrail=self.get_object())
        return self.deleted_response()

    @extend_schema(methods=["GET"], responses={200: KeyAssignmentSerializer(many=True)}, operation_id="guardrail_keys")
    @extend_schema(
        methods=["POST"],
        request=KeyHashesSerializer,
        responses={200: AssignedCountSerializer},
        operation_id="guardrail_keys_assign",
    )
    @action(detail=True, methods=["get", "post"], url_path="assignments/keys")
    def keys(self, request, pk=None):
        guardrail = self.get_object()
        if request.method == "GET":
            queryset = selectors.key_assignments(organization_id=guardrail.organization_id, guardrail=guardrail)
            return self.list_response(queryset, KeyAssignmentSerializer)
        data = self.validated(KeyHashesSerializer)
        count = services.guardrail_assign_keys(
            guardrail=guardrail, key_hashes=data["key_hashes"], assigned_by_id=self.principal.key_id
        )
        return Response({"assigned_count": count})

    @extend_schema(request=KeyHashesSerializer, responses={200: UnassignedCountSerializer})
    @action(detail=True, methods=["post"], url_path="assignments/keys/remove")
    def keys_remove(self, request, pk=None):
        data = self.validated(KeyHashesSerializer)
        count = services.guardrail_unassign_keys(guardrail=self.get_object(), key_hashes=data["key_hashes"])
        return Response({"unassigned_count": count})

    @extend_schema(
        methods=["GET"], responses={200: MemberAssignmentSerializer(many=True)}, operation_id="guardrail_members"
    )
    @extend_schema(
        methods=["POST"],
        request=MemberUserIdsSerializer,
        responses={200: AssignedCountSerializer},
        operation_id="guardrail_members_assign",
    )
    @action(detail=True, methods=["get", "post"], url_path="assignments/members")
    def members(self, request, pk=None):
        guardrail = self.get_object()
        if request.method == "GET":
            queryset = selectors.member_assignments(organization_id=guardrail.organization_id, guardrail=guardrail)
            return self.list_response(queryset, MemberAssignmentSerializer)
        data = self.validated(MemberUserIdsSerializer)
        count = services.guardrail_assign_members(
            guardrail=guardrail, user_ids=data["member_user_ids"], assigned_by_id=self.principal.key_id
        )
        return Response({"assigned_count": count})

    @extend_schema(request=MemberUserIdsSerializer, responses={200: UnassignedCountSerializer})
    @action(detail=True, methods=["post"], url_path="assignments/members/remove")
    def members_remove(self, request, pk=None):
        data = self.validated(MemberUserIdsSerializer)
        count = services.guardrail_unassign_members(guardrail=self.get_object(), user_ids=data["member_user_ids"])
        return Response({"unassigned_count": count})

    @extend_schema(responses={200: KeyAssignmentSerializer(many=True)}, operation_id="guardrail_key_assignments_all")
    @action(detail=False, methods=["get"], url_path="assignments/keys")
    def all_keys(self, request):
        queryset = selectors.key_assignments(organization_id=self.principal.organization_id)
        return self.list_response(queryset, KeyAssignmentSerializer)

    @extend_schema(
        responses={200: MemberAssignmentSerializer(many=True)}, operation_id="guardrail_member_assignments_all"
    )
    @action(detail=False, methods=["get"], url_path="assignments/members")
    def all_members(self, request):
        queryset = selectors.member_assignments(organization_id=self.principal.organization_id)
        return self.list_response(queryset, MemberAssignmentSerializer)
