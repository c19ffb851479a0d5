"""GET /api/v1/analytics/usage (hourly rollups) and GET /api/v1/activity (Generation rows); management key."""

from __future__ import annotations

import orjson
from django.http import HttpResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema

from analytics.selectors import UsageQuery, activity_count, activity_list, usage_series
from analytics.serializers import (
    ActivityQuerySerializer,
    ActivitySerializer,
    UsageQuerySerializer,
    UsageResponseSerializer,
)
from gateway_project.api.serializers import format_timestamp
from gateway_project.api.viewsets import OrganizationViewSet
from inference.models import Generation


class OneObjectSchema(AutoSchema):
    """The `list` action of a viewset answering one object (not an array) in the OpenAPI document."""

    def _is_list_view(self, serializer=None) -> bool:
        return False


class UsageViewSet(OrganizationViewSet):
    """Usage of the caller's organization per time bucket, optionally split by a dimension."""

    schema = OneObjectSchema()
    queryset = Generation.objects.none()
    serializer_class = UsageResponseSerializer
    pagination_class = None

    @extend_schema(
        parameters=[UsageQuerySerializer],
        responses={200: UsageResponseSerializer},
        operation_id="analytics_usage",
        description="Requests, tokens, cost, error rate and p50/p95 latency per `granularity` bucket between "
        "`start` and `end` (whole UTC hours), split by `group_by` when given. Read from hourly rollups kept as "
        "generations are recorded, so a year of traffic answers as fast as a day; latency percentiles are "
        "estimated from a bounded histogram. Buckets without traffic are omitted.",
    )
    def list(self, request):
        params = self.validated(UsageQuerySerializer, data=request.query_params)
        query = UsageQuery(organization_id=self.principal.organization_id, **params)
        # Written by hand with orjson, not through UsageResponseSerializer (which documents it) and DRF's renderer:
        # a month by model per hour is 100,000+ entries, and DRF's per-field serialization cost more than the query.
        entries = usage_series(query)
        stamps: dict = {}
        for entry in entries:
            bucket = entry["bucket"]
            stamp = stamps.get(bucket)
            if stamp is None:
                stamp = stamps[bucket] = format_timestamp(bucket)
            entry["bucket"] = stamp
            entry["cost"] = float(entry["cost"])
        body = {
            "start": format_timestamp(params["start"]),
            "end": format_timestamp(params["end"]),
            "granularity": params["granularity"],
            "group_by": params["group_by"],
            "data": entries,
        }
        return HttpResponse(orjson.dumps(body), content_type="application/json")


class ActivityViewSet(OrganizationViewSet):
    """The organization's Generation rows, newest first, filtered and paginated."""

    queryset = Generation.objects.all()
    serializer_class = ActivitySerializer

    @extend_schema(
        parameters=[ActivityQuerySerializer],
        responses={200: ActivitySerializer(many=True)},
        operation_id="activity_list",
        description="The accounting records of the caller's organization (the data of GET /generation?id=), "
        "newest first, with the public API's activity-item fields on each row (one generation per row).",
    )
    def list(self, request):
        filters = self.validated(ActivityQuerySerializer, data=request.query_params)
        organization_id = self.principal.organization_id
        rows = activity_list(organization_id=organization_id, filters=filters)
        total = lambda: activity_count(organization_id=organization_id, filters=filters)  # noqa: E731
        return self.list_response(Counted(rows, total))


class Counted:
    """A queryset whose total the paginator reads from `count` (the rollups) instead of COUNT(*) over the rows."""

    def __init__(self, queryset, count):
        self.queryset, self._count = queryset, count

    def count(self) -> int:
        return self._count()

    def __getitem__(self, index):
        return self.queryset[index]
