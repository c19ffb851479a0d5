"""GET /datasets/rankings-daily: daily token totals of the top 50 public models (any valid key)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from gateway_project.api.permissions import IsAnyKey
from gateway_project.api.serializers import format_timestamp
from rankings.rate_limits import check_rankings_rate_limit
from rankings.selectors import last_aggregated_at, rankings
from rankings.serializers import RankingsQuerySerializer, RankingsResponseSerializer

DATASET_VERSION = "v1"


class RankingsDailyView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=[RankingsQuerySerializer],
        responses={200: RankingsResponseSerializer},
        operation_id="datasets_rankings_daily",
        description="Data licensed CC BY 4.0; reuse requires attribution to the service, citing `meta.as_of`.",
    )
    def get(self, request):
        params = RankingsQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        query = params.to_query()
        check_rankings_rate_limit(key_hash=request.user.key_hash, organization_id=request.user.organization_id)
        return Response(
            {
                "data": rankings(query),
                "meta": {
                    "as_of": format_timestamp(last_aggregated_at()),
                    "start_date": query.start_date.isoformat(),
                    "end_date": query.end_date.isoformat(),
                    "version": DATASET_VERSION,
                },
            }
        )
