"""Endpoints of the presets app: create versions from Responses, messages or Chat Completions bodies, and read
presets."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import action

from gateway_project.api.errors import validation_error
from gateway_project.api.openapi import ERROR_ENVELOPE
from gateway_project.api.viewsets import OrganizationViewSet
from presets import selectors, services
from presets.chat_schema import validate_chat_body
from presets.messages_schema import validate_messages_body
from presets.models import Preset
from presets.responses_schema import validate_responses_body
from presets.serializers import (
    PRESET_CHAT_BODY,
    PRESET_MESSAGES_BODY,
    PRESET_RESPONSES_BODY,
    PresetData,
    PresetListItemSerializer,
    PresetSerializer,
    PresetVersionData,
    PresetVersionSerializer,
)

SLUG = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="URL-safe preset slug, at least 1 character")
CONFLICT = OpenApiResponse(
    ERROR_ENVELOPE, description="Archived preset, or a concurrent change that could not get through"
)
VERSION = OpenApiParameter("version", int, OpenApiParameter.PATH, description="Version number, from 1")


class PresetViewSet(OrganizationViewSet):
    """Presets of the organization, addressed by slug."""

    queryset = Preset.objects.all()
    serializer_class = PresetSerializer
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"

    def _body(self) -> dict:
        if not isinstance(self.request.data, dict):
            raise validation_error("body", "must be a JSON object")
        return self.request.data

    def _preset(self, slug: str) -> Preset:
        return selectors.preset_get(organization_id=self.principal.organization_id, slug=slug)

    @extend_schema(responses={200: PresetListItemSerializer(many=True)})
    def list(self, request):
        return self.list_response(
            selectors.preset_list(organization_id=self.principal.organization_id), PresetListItemSerializer
        )

    @extend_schema(parameters=[SLUG], responses={200: PresetData})
    def retrieve(self, request, slug=None):
        return self.data_response(PresetSerializer(self._preset(slug)).data)

    @extend_schema(
        parameters=[SLUG],
        request=PRESET_RESPONSES_BODY,
        responses={200: PresetData, 409: CONFLICT},
        operation_id="presets_create_from_responses",
    )
    @action(detail=True, methods=["post"], url_path="responses")
    def responses(self, request, slug=None):
        services.preset_slug_validate(slug)
        body = validate_responses_body(self._body())
        preset = services.preset_create_from_responses(principal=self.principal, slug=slug, body=body)
        return self.data_response(PresetSerializer(preset).data)

    @extend_schema(
        parameters=[SLUG],
        request=PRESET_MESSAGES_BODY,
        responses={200: PresetData, 409: CONFLICT},
        operation_id="presets_create_from_messages",
    )
    @action(detail=True, methods=["post"], url_path="messages")
    def messages(self, request, slug=None):
        services.preset_slug_validate(slug)
        body = validate_messages_body(self._body())
        preset = services.preset_create_from_messages(principal=self.principal, slug=slug, body=body)
        return self.data_response(PresetSerializer(preset).data)

    @extend_schema(
        parameters=[SLUG],
        request=PRESET_CHAT_BODY,
        responses={200: PresetData, 409: CONFLICT},
        operation_id="presets_create_from_chat_completions",
    )
    @action(detail=True, methods=["post"], url_path="chat/completions")
    def chat_completions(self, request, slug=None):
        services.preset_slug_validate(slug)
        body = validate_chat_body(self._body())
        preset = services.preset_create_from_chat(principal=self.principal, slug=slug, body=body)
        return self.data_response(PresetSerializer(preset).data)

    @extend_schema(parameters=[SLUG], responses={200: PresetVersionSerializer(many=True)})
    @action(detail=True, methods=["get"], url_path="versions")
    def versions(self, request, slug=None):
        return self.list_response(selectors.preset_versions(preset=self._preset(slug)), PresetVersionSerializer)

    @extend_schema(parameters=[SLUG, VERSION], responses={200: PresetVersionData})
    @action(detail=True, methods=["get"], url_path=r"versions/(?P<version>[0-9]+)")
    def version(self, request, slug=None, version=None):
        found = selectors.preset_version_get(preset=self._preset(slug), version=int(version))
        return self.data_response(PresetVersionSerializer(found).data)
