"""Base viewsets of the management plane: organization scoping in one place, and the response shapes.

Every admin viewset derives from `OrganizationViewSet`: its queryset is restricted to the caller's
organization (through `organization_field`), so another organization's id is a 404, never its data.
Single records are wrapped in `{"data": ...}`; creation answers 201; DELETE answers `{"deleted": true}`.
"""

from __future__ import annotations

from typing import Any

from rest_framework import status, viewsets
from rest_framework.response import Response

from gateway_project.api.serializers import StrictSerializer
from gateway_project.pipeline import Principal


class OrganizationViewSet(viewsets.GenericViewSet):
    """GenericViewSet restricted to the calling key's organization."""

    organization_field = "organization_id"

    @property
    def principal(self) -> Principal:
        return self.request.user

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset.filter(**{self.organization_field: self.principal.organization_id})

    def data_response(self, data: Any, *, created: bool = False) -> Response:
        return Response({"data": data}, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def deleted_response(self) -> Response:
        return Response({"deleted": True})

    def list_response(self, queryset, serializer_class=None) -> Response:
        serializer_class = serializer_class or self.get_serializer_class()
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(
            serializer_class(page, many=True, context=self.get_serializer_context()).data
        )

    def validated(self, serializer_class, *, partial: bool = False, data: Any = None) -> dict:
        """Validate the request body (or `data`) with `serializer_class` and return its validated data.

        A body is only read with a `StrictSerializer` (an unknown member is a 400 naming it); `data` (query
        parameters) may use any serializer.
        """
        if data is None and not issubclass(serializer_class, StrictSerializer):
            raise TypeError(f"{serializer_class.__name__} reads a request body: derive it from StrictSerializer")
        serializer = serializer_class(
            data=self.request.data if data is None else data, partial=partial, context=self.get_serializer_context()
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
