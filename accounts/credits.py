"""`GET /credits`: the public router API's credit balance, read here as the spending limit that applies to
the calling key first.

There are no prepaid credits in this gateway: spend is bounded by limits (guardrail budgets, workspace
budgets, the key's own `limit`; `GET /key` lists them all). `total_credits` is the limit of the calling key's
effective budget (the layer with the least remaining, the one that blocks first) and `total_usage` the spend
enforcement counts against it in its current window, so `total_credits - total_usage` is what the key can
still spend before a request is refused with 402. With no limit at all, `total_credits` is -1 (unlimited, as
`GET /key` says of a missing rate limit) and `total_usage` the key's spend of all time. `budget` is the
effective budget itself (null when there is none).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import key_limits
from accounts.models import ApiKey
from accounts.selectors import usage_by_key
from gateway_project.api.errors import validation_error
from gateway_project.api.permissions import IsAnyKey

UNLIMITED = -1.0


class CreditsSerializer(serializers.Serializer):
    total_credits = serializers.FloatField(help_text="USD: the effective budget's limit; -1 when none applies")
    total_usage = serializers.FloatField(
        help_text="USD spent against that limit in its window; the key's spend of all time when none applies"
    )
    budget = serializers.DictField(allow_null=True, help_text="The effective budget, as in GET /key")


class CreditsResponseSerializer(serializers.Serializer):
    data = CreditsSerializer()


def credits(api_key: ApiKey) -> dict:
    effective = key_limits.key_budgets(api_key)[1]
    if effective is not None:
        return {"total_credits": effective["limit_usd"], "total_usage": effective["spend_usd"], "budget": effective}
    spent = usage_by_key([api_key.hash]).get(api_key.hash, {}).get("usage", 0)
    return {"total_credits": UNLIMITED, "total_usage": float(spent), "budget": None}


class CreditsView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        responses={200: CreditsResponseSerializer},
        operation_id="credits_retrieve",
        description="The limit that applies to the calling key first and the spend against it (no prepaid "
        "credits here: `total_credits` is the effective budget's limit, -1 without one).",
    )
    def get(self, request):
        for name in request.query_params:
            raise validation_error(name, "unknown query parameter (accepted: none)")
        api_key = ApiKey.objects.select_related("workspace").get(pk=request.user.key_id)
        return Response({"data": credits(api_key)})
