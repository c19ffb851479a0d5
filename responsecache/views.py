"""POST /api/v1/cache/purge: delete the organization's cached answers (management key)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response

from gateway_project.api.viewsets import OrganizationViewSet
from responsecache.models import ResponseCacheEntry
from responsecache.serializers import CachePurgedSerializer, CachePurgeSerializer
from responsecache.services import cache_purge


class ResponseCacheViewSet(OrganizationViewSet):
    """The response cache of the organization (docs/cache.md)."""

    queryset = ResponseCacheEntry.objects.all()

    @extend_schema(request=CachePurgeSerializer, responses={200: CachePurgedSerializer}, operation_id="cache_purge")
    @action(detail=False, methods=["post"], url_path="purge")
    def purge(self, request):
        data = self.validated(CachePurgeSerializer)
        deleted = cache_purge(organization_id=self.principal.organization_id, model=data.get("model"))
        return Response({"data": {"purged": deleted}})
