"""GET /api/v1/analytics/usage (hourly rollups) and GET /api/v1/activity (Generation rows); management key."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from analytics.selectors import UsageQuery, activity_list, usage_series
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
        # Written by hand, not through UsageResponseSerializer (which documents it): a month by model is thousands
        # of entries, and DRF's per-field serialization of them cost about as much as the query.
        entries = [
            {**entry, "bucket": format_timestamp(entry["bucket"]), "cost": float(entry["cost"])}
            for entry in usage_series(query)
        ]
        return Response(
            {
                "start": format_timestamp(params["start"]),
                "end": format_timestamp(params["end"]),
                "granularity": params["granularity"],
                "group_by": params["group_by"],
                "data": entries,
            }
        )


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
        return self.list_response(activity_list(organization_id=self.principal.organization_id, filters=filters))
