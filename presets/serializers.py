"""Serializers of the presets app: output shapes, and request bodies for the OpenAPI description.

The request bodies are validated by `inference.schema` (Responses) and `presets.messages_schema`
(messages); the body serializers below only document them, and the Responses body's schema is the typed request's.
"""

from __future__ import annotations

from rest_framework import serializers

from gateway_project.api.serializers import GatewayModelSerializer, data_envelope
from inference.openapi import FIELD_SCHEMAS
from inference.openapi_wire import CHAT_REQUEST
from presets.models import Preset, PresetVersion


class PresetVersionSerializer(GatewayModelSerializer):
    preset_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = PresetVersion
        fields = ["id", "preset_id", "version", "config", "system_prompt", "creator_id", "created_at", "updated_at"]
        read_only_fields = fields


class PresetListItemSerializer(GatewayModelSerializer):
    """A preset without its designated version (list items, DECISIONS.md §4)."""

    workspace_id = serializers.UUIDField(read_only=True)
    designated_version_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = Preset
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "status",
            "status_updated_at",
            "creator_user_id",
            "workspace_id",
            "designated_version_id",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PresetSerializer(PresetListItemSerializer):
    """A preset with its designated version."""

    designated_version = PresetVersionSerializer(read_only=True, allow_null=True)

    class Meta(PresetListItemSerializer.Meta):
        fields = [*PresetListItemSerializer.Meta.fields, "designated_version"]
        read_only_fields = fields


PresetData = data_envelope(PresetSerializer, "PresetData")
PresetVersionData = data_envelope(PresetVersionSerializer, "PresetVersionData")


# The Responses body of POST /presets/{slug}/responses, generated from the typed request (one property per member
# of inference.responses_request.ResponsesRequest), plus `messages`; strict, as the endpoint is.
PRESET_RESPONSES_BODY = {
    "application/json": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **FIELD_SCHEMAS,
            "messages": {"type": "array", "items": {"type": "object"}, "description": "Accepted, not persisted"},
        },
        "description": "A Responses request body; only preset fields are kept, `instructions` is the system prompt.",
    }
}


# The Chat Completions body of POST /presets/{slug}/chat/completions: the typed Chat Completions request's schema
# (inference.chat_request_type), `messages` optional (its system and developer messages are the system prompt).
PRESET_CHAT_BODY = {
    "application/json": {
        "type": "object",
        "additionalProperties": False,
        "properties": CHAT_REQUEST["properties"],
        "description": "A Chat Completions request body; only preset fields are kept, the system and developer "
        "messages are the system prompt.",
    }
}


class PresetMessagesBodySerializer(serializers.Serializer):
    """A messages request body (documentation); only preset fields are kept, `system` is the system prompt."""

    model = serializers.CharField(required=False)
    messages = serializers.ListField(child=serializers.JSONField(), required=False)
    max_tokens = serializers.IntegerField(required=False, min_value=1)
    system = serializers.JSONField(required=False, help_text="A string or an array of text blocks.")
    fallbacks = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=3, help_text="At most 3 `{model}` objects."
    )
    output_config = serializers.JSONField(required=False, help_text="`{effort, format, task_budget}`.")
    speed = serializers.ChoiceField(choices=["fast", "standard"], required=False, allow_null=True)
    route = serializers.ChoiceField(choices=["fallback", "sort"], required=False, allow_null=True)
    session_id = serializers.CharField(required=False, max_length=256)
    user = serializers.CharField(required=False, max_length=256)
    provider = serializers.JSONField(required=False)
    plugins = serializers.ListField(child=serializers.JSONField(), required=False)
    stop_server_tools_when = serializers.ListField(child=serializers.JSONField(), required=False, min_length=1)
    cache_control = serializers.JSONField(required=False)
    trace = serializers.JSONField(required=False)
