"""The answer to OPTIONS on the management plane: the view's name, description and the methods it allows.

DRF's default (`SimpleMetadata`) also describes the request body of each write method by building the
view's serializer; the gateway's views choose their serializer per action (many have no `serializer_class`),
so that introspection failed with a 500 on routes such as `OPTIONS /api/v1/cache/purge`. The request bodies
are described by the OpenAPI document (`GET /api/v1/openapi.json`) instead.
"""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import BaseMetadata


class GatewayMetadata(BaseMetadata):
    def determine_metadata(self, request: Any, view: Any) -> dict[str, Any]:
        return {
            "name": view.get_view_name(),
            "description": view.get_view_description(),
            "methods": list(view.allowed_methods),
            "renders": [renderer.media_type for renderer in view.renderer_classes],
            "parses": [parser.media_type for parser in view.parser_classes],
            "schema": "/api/v1/openapi.json",
        }
