"""Management-plane reads of the inference app, open to any valid key: the model catalog, the generation lookup.

They are DRF views (not data-plane consumers) because they are plain reads off the hot path: DRF gives them
key authentication, the error envelope and the OpenAPI document for free, as for the rankings dataset.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from gateway_project.api.errors import GatewayError
from gateway_project.api.permissions import IsAnyKey
from inference.catalog_params import ModelsQuerySerializer, refuse_unserved
from inference.catalog_present import API_PREFIX, endpoints_object, model_list, model_object
from inference.catalog_query import list_models
from inference.catalog_selectors import get_model
from inference.catalog_serializers import (
    CatalogModelSerializer,
    ModelEndpointsResponseSerializer,
    ModelListSerializer,
)
from inference.generation_record import GenerationRecordResponseSchema, GenerationRecordSerializer
from inference.selectors import generation_get
from inference.serializers import GenerationQuerySerializer, reject_unknown

MODEL_PATH_PARAMETERS = [
    OpenApiParameter("vendor", str, OpenApiParameter.PATH, description="The part of the model id before `/`"),
    OpenApiParameter("name", str, OpenApiParameter.PATH, description="The part of the model id after `/`"),
]


def _model_or_404(request, vendor: str, name: str):
    reject_unknown(request.query_params, ())
    slug = f"{vendor}/{name}"
    entry = get_model(request.user, slug)
    if entry is None:
        raise GatewayError(404, f"Model '{slug}' does not exist", metadata={"model": slug})
    return entry


class ModelListView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=[ModelsQuerySerializer],
        responses={200: ModelListSerializer},
        operation_id="models_list",
        description="The catalog's models the calling key may use (its guardrails hide the others), filtered, "
        "sorted and paginated as the public router API's SDK asks (`total_count` counts every match, "
        "`links.next` is the next page or null). Shaped as OpenAI's model list too, so `client.models.list()` works.",
    )
    def get(self, request):
        refuse_unserved(request.query_params)
        reject_unknown(request.query_params, tuple(ModelsQuerySerializer().fields))
        params = ModelsQuerySerializer(data=request.query_params.dict())  # a dict: an empty value is not "omitted"
        params.is_valid(raise_exception=True)
        query = params.to_query()
        models, total = list_models(request.user, query)
        return Response(model_list(models, total, query, request.query_params, f"{API_PREFIX}/models"))


class ModelDetailView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=MODEL_PATH_PARAMETERS,
        responses={200: CatalogModelSerializer},
        operation_id="models_retrieve",
        description="One model of the catalog (`client.models.retrieve('vendor/name')`); 404 when it does not "
        "exist or the key's guardrails do not allow it.",
    )
    def get(self, request, vendor: str, name: str):
        return Response(model_object(_model_or_404(request, vendor, name)))


class ModelEndpointsView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=MODEL_PATH_PARAMETERS,
        responses={200: ModelEndpointsResponseSerializer},
        operation_id="models_endpoints_list",
        description="The endpoints serving a model that the calling key may use, in the order routing tries "
        "them: provider, prices, context and output limits, data policy (ZDR) and regions.",
    )
    def get(self, request, vendor: str, name: str):
        return Response({"data": endpoints_object(_model_or_404(request, vendor, name))})


class GenerationView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=[GenerationQuerySerializer],
        responses={200: GenerationRecordResponseSchema},
        operation_id="generation_retrieve",
        description="The accounting record of one request of the caller's organization, by the `id` its answer "
        "carried or its `x-request-id`: model, provider, tokens, cost, latency, time to first token, status. "
        "Another organization's id is 404. The record is written just after the answer; right after it a "
        "lookup can be 404 for a few milliseconds.",
    )
    def get(self, request):
        reject_unknown(request.query_params, ("id",))
        params = GenerationQuerySerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        row = generation_get(organization_id=request.user.organization_id, id=params.validated_data["id"])
        if row is None:
            raise GatewayError(404, f"Generation '{params.validated_data['id']}' not found")
        return Response({"data": GenerationRecordSerializer(row).data})
