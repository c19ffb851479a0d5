"""Serializers of the presets app: output shapes, and request bodies for the OpenAPI description.

The request bodies are validated by `inference.schema` (Responses), `presets.chat_schema` (Chat Completions)
and `presets.messages_schema` (messages); the body schemas below only document them, each generated from its
format's typed request.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from gateway_project.api.serializers import GatewayModelSerializer, data_envelope
from inference.openapi import FIELD_SCHEMAS
from inference.openapi_types import openapi_properties
from inference.openapi_wire import CHAT_REQUEST, MESSAGES_REQUEST
from presets.messages_schema import MESSAGES_MEMBERS, SHARED_WITH_RESPONSES, PresetMessagesMembers
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


# The messages body of POST /presets/{slug}/messages: the members presets.messages_schema accepts, each with the
# schema of the typed Messages request (inference.messages_request_type; `user` from the Responses request), and
# the presets API's own members (presets.messages_schema.PresetMessagesMembers); strict, as the endpoint is.
def _messages_body() -> dict[str, Any]:
    own = openapi_properties(PresetMessagesMembers)
    accepted = MESSAGES_MEMBERS | set(SHARED_WITH_RESPONSES)
    properties = {
        name: own.get(name) or MESSAGES_REQUEST["properties"].get(name) or FIELD_SCHEMAS[name]
        for name in (*MESSAGES_REQUEST["properties"], *FIELD_SCHEMAS, *own)
        if name in accepted
    }
    return {
        "application/json": {
            "type": "object",
            "additionalProperties": False,
            "properties": properties,
            "description": "A messages request body; only preset fields are kept, `system` is the system prompt.",
        }
    }


PRESET_MESSAGES_BODY = _messages_body()
