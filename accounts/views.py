"""Endpoints of the accounts app: /key, /keys, /workspaces and workspace members."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import services
from accounts.current_key import CurrentKeySerializer
from accounts.models import ApiKey, Organization, User, Workspace, WorkspaceMember
from accounts.selectors import usage_by_key, workspace_get
from accounts.serializers import (
    ApiKeyCreatedSerializer,
    ApiKeyCreateSerializer,
    ApiKeySerializer,
    ApiKeyUpdateSerializer,
    KeyListQuerySerializer,
    MembersAddedSerializer,
    MembersRemovedSerializer,
    OrganizationMemberSerializer,
    WorkspaceMembersChangeSerializer,
    WorkspaceMemberSerializer,
    WorkspaceSerializer,
    WorkspaceWriteSerializer,
)
from gateway_project.api.errors import validation_error
from gateway_project.api.permissions import IsAnyKey
from gateway_project.api.serializers import (
    DeletedSerializer,
    data_envelope,
)
from gateway_project.api.viewsets import OrganizationViewSet

ApiKeyData = data_envelope(ApiKeySerializer, "ApiKeyData")
CurrentKeyData = data_envelope(CurrentKeySerializer, "CurrentKeyData")
WorkspaceData = data_envelope(WorkspaceSerializer, "WorkspaceData")


def _key_context(keys: list[ApiKey]) -> dict:
    return {"usage": usage_by_key([k.hash for k in keys])}


class CurrentKeyView(APIView):
    """GET /key: the calling key, inference or management."""

    permission_classes = [IsAnyKey]

    @extend_schema(responses={200: CurrentKeyData}, operation_id="key_current")
    def get(self, request):
        key = ApiKey.objects.select_related("workspace").get(pk=request.user.key_id)
        return Response({"data": CurrentKeySerializer(key, context=_key_context([key])).data})


class ApiKeyViewSet(OrganizationViewSet):
    """Management of the organization's API keys, addressed by their hash."""

    queryset = ApiKey.objects.select_related("workspace")
    serializer_class = ApiKeySerializer
    lookup_field = "hash"
    lookup_value_regex = "[^/]+"

    def _serialize(self, keys: list[ApiKey]):
        return ApiKeySerializer(keys, many=True, context=_key_context(keys)).data

    @extend_schema(parameters=[KeyListQuerySerializer], responses={200: ApiKeySerializer(many=True)})
    def list(self, request):
        queryset = self.get_queryset()
        workspace = request.query_params.get("workspace_id")
        if workspace:
            queryset = queryset.filter(
                workspace=workspace_get(organization_id=self.principal.organization_id, id_or_slug=workspace)
            )
        query = self.validated(KeyListQuerySerializer, data=request.query_params.dict())
        if query.get("include_disabled") is False:
            queryset = queryset.filter(disabled=False)
        if query.get("include_expired") is False:
            queryset = queryset.exclude(expires_at__lte=timezone.now())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self._serialize(page))

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def create(self, request):
        data = self.validated(ApiKeyCreateSerializer)
        organization = Organization.objects.get(pk=self.principal.organization_id)
        workspace = None
        if data.get("workspace_id"):
            workspace = workspace_get(organization_id=organization.id, id_or_slug=data["workspace_id"])
        creator = None
        if data.get("creator_user_id"):
            creator = User.objects.filter(organization=organization, pk=data["creator_user_id"]).first()
            if creator is None:
                raise validation_error("creator_user_id", f"unknown user id '{data['creator_user_id']}'")
        created = services.api_key_create(
            organization=organization,
            name=data["name"],
            workspace=workspace,
            creator=creator,
            is_management=data.get("is_management", False),
            limit=data.get("limit"),
            limit_reset=data.get("limit_reset"),
            include_byok_in_limit=data.get("include_byok_in_limit", False),
            expires_at=data.get("expires_at"),
            disabled=data.get("disabled", False),
            requests_per_minute=data.get("requests_per_minute"),
            tokens_per_minute=data.get("tokens_per_minute"),
        )
        record = self._serialize([created.api_key])[0]
        return Response({"data": record, "key": created.raw_key}, status=201)

    @extend_schema(responses={200: ApiKeyData})
    def retrieve(self, request, hash=None):
        key = self.get_object()
        return self.data_response(self._serialize([key])[0])

    @extend_schema(request=ApiKeyUpdateSerializer, responses={200: ApiKeyData})
    def partial_update(self, request, hash=None):
        key = self.get_object()
        data = self.validated(ApiKeyUpdateSerializer, partial=True)
        key = services.api_key_update(api_key=key, data=data)
        return self.data_response(self._serialize([key])[0])

    @extend_schema(responses={200: DeletedSerializer})
    def destroy(self, request, hash=None):
        self.get_object().delete()
        return self.deleted_response()


class WorkspaceViewSet(OrganizationViewSet):
    """Workspaces of the organization, addressed by uuid or slug."""

    queryset = Workspace.objects.all()
    serializer_class = WorkspaceSerializer
    lookup_value_regex = "[^/]+"

    def get_object(self) -> Workspace:
        return workspace_get(organization_id=self.principal.organization_id, id_or_slug=self.kwargs["pk"])

    @extend_schema(responses={200: WorkspaceSerializer(many=True)})
    def list(self, request):
        return self.list_response(self.get_queryset())

    @extend_schema(request=WorkspaceWriteSerializer, responses={201: WorkspaceData})
    def create(self, request):
        data = self.validated(WorkspaceWriteSerializer)
        organization = Organization.objects.get(pk=self.principal.organization_id)
        workspace = services.workspace_create(
            organization=organization,
            name=data["name"],
            slug=data.get("slug"),
            description=data.get("description"),
            requests_per_minute=data.get("requests_per_minute"),
            tokens_per_minute=data.get("tokens_per_minute"),
            created_by=self._creator(),
            settings=data,
        )
        return self.data_response(WorkspaceSerializer(workspace).data, created=True)

    @extend_schema(responses={200: WorkspaceData})
    def retrieve(self, request, pk=None):
        return self.data_response(WorkspaceSerializer(self.get_object()).data)

    @extend_schema(request=WorkspaceWriteSerializer, responses={200: WorkspaceData})
    def partial_update(self, request, pk=None):
        data = self.validated(WorkspaceWriteSerializer, partial=True)
        workspace = services.workspace_update(workspace=self.get_object(), data=data)
        return self.data_response(WorkspaceSerializer(workspace).data)

    @extend_schema(responses={200: DeletedSerializer})
    def destroy(self, request, pk=None):
        services.workspace_delete(workspace=self.get_object())
        return self.deleted_response()

    @extend_schema(responses={200: WorkspaceMemberSerializer(many=True)})
    @action(detail=True, methods=["get"], url_path="members")
    def members(self, request, pk=None):
        workspace = self.get_object()
        queryset = WorkspaceMember.objects.filter(workspace=workspace).select_related("user")
        return self.list_response(queryset, WorkspaceMemberSerializer)

    @extend_schema(request=WorkspaceMembersChangeSerializer, responses={200: MembersAddedSerializer})
    @action(detail=True, methods=["post"], url_path="members/add")
    def members_add(self, request, pk=None):
        data = self.validated(WorkspaceMembersChangeSerializer)
        members = services.workspace_members_add(
            workspace=self.get_object(), user_ids=data["user_ids"], role=data["role"]
        )
        count = len(members)
        return Response(
            {"assigned_count": count, "added_count": count, "data": WorkspaceMemberSerializer(members, many=True).data}
        )

    @extend_schema(request=WorkspaceMembersChangeSerializer, responses={200: MembersRemovedSerializer})
    @action(detail=True, methods=["post"], url_path="members/remove")
    def members_remove(self, request, pk=None):
        data = self.validated(WorkspaceMembersChangeSerializer)
        count = services.workspace_members_remove(workspace=self.get_object(), user_ids=data["user_ids"])
        return Response({"unassigned_count": count, "removed_count": count})

    def _creator(self) -> User | None:
        """The user behind the calling management key (its creator), recorded as the workspace's `created_by`."""
        user_id = self.principal.user_id
        return None if user_id is None else User.objects.filter(pk=user_id).first()


class OrganizationMemberViewSet(OrganizationViewSet):
    """GET /organization/members: the users of the organization (offset, limit)."""

    queryset = User.objects.order_by("date_joined", "id")
    serializer_class = OrganizationMemberSerializer
    organization_field = "organization_id"

    @extend_schema(responses={200: OrganizationMemberSerializer(many=True)}, operation_id="organization_members_list")
    def list(self, request):
        return self.list_response(self.get_queryset())
