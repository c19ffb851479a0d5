"""Serializers of the scim management API (shape only; rules live in scim.services)."""

from __future__ import annotations

from rest_framework import serializers

from accounts.models import WorkspaceRole
from gateway_project.api.serializers import GatewayModelSerializer, StrictSerializer
from scim.models import GroupMapping, ScimGroup


class GroupMappingSerializer(GatewayModelSerializer):
    """A SCIM group mapping: members of the group are members of the workspace with `role`."""

    organization_id = serializers.CharField(read_only=True)
    scim_group_id = serializers.UUIDField(source="group_id", read_only=True)
    workspace_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = GroupMapping
        fields = ["id", "organization_id", "scim_group_id", "workspace_id", "role", "created_at", "updated_at"]
        read_only_fields = fields


class GroupMappingCreateSerializer(StrictSerializer):
    scim_group_id = serializers.UUIDField()
    workspace_id = serializers.UUIDField()
    role = serializers.ChoiceField(choices=WorkspaceRole.choices)


class GroupMappingUpdateSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=WorkspaceRole.choices)


class GroupMappingDeleteQuerySerializer(serializers.Serializer):
    keep_members = serializers.ChoiceField(
        choices=["true", "false"],
        help_text="Required. false removes the workspace memberships this mapping granted; true keeps them.",
    )


class GroupMappingListQuerySerializer(serializers.Serializer):
    scim_group_id = serializers.UUIDField(required=False)
    workspace_id = serializers.UUIDField(required=False)


class ScimGroupSerializer(GatewayModelSerializer):
    """A group the identity provider pushed through SCIM."""

    organization_id = serializers.UUIDField(read_only=True)
    member_count = serializers.IntegerField(read_only=True)
    mapping_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = ScimGroup
        fields = [
            "id",
            "organization_id",
            "display_name",
            "external_id",
            "member_count",
            "mapping_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
