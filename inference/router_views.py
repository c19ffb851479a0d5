"""Catalog reads the public router API's SDK calls beside GET /models: a model by author and slug, the model
count, the ZDR endpoints, the providers and the embeddings models. Open to any valid key; what a key sees is
what it could route to (inference/catalog_selectors.py), as for GET /models."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from gateway_project.api.errors import GatewayError
from gateway_project.api.permissions import IsAnyKey
from inference.catalog_loader import EMBEDDINGS
from inference.catalog_params import CountQuerySerializer, ModelsQuerySerializer, PageQuerySerializer
from inference.catalog_present import API_PREFIX, endpoint_object, model_list, model_object
from inference.catalog_query import ModelQuery, list_models
from inference.catalog_selectors import get_model, visible_models
from inference.catalog_serializers import (
    CountResponseSerializer,
    ModelListSerializer,
    ModelResponseSerializer,
    ProvidersResponseSerializer,
    ZdrEndpointsResponseSerializer,
)
from inference.endpoint_traffic import endpoint_traffic
from inference.serializers import reject_unknown

AUTHOR_SLUG_PARAMETERS = [
    OpenApiParameter("author", str, OpenApiParameter.PATH, description="The part of the model id before `/`"),
    OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The part of the model id after `/`"),
]


def _validated(serializer_class, request):
    reject_unknown(request.query_params, tuple(serializer_class().fields))
    params = serializer_class(data=request.query_params.dict())
    params.is_valid(raise_exception=True)
    return params


class ModelBySlugView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=AUTHOR_SLUG_PARAMETERS,
        responses={200: ModelResponseSerializer},
        operation_id="model_by_slug",
        description='One model as `{"data": <model>}` (the public router API\'s `GET /model/{author}/{slug}`); '
        "404 when it does not exist or the key's guardrails do not allow it.",
    )
    def get(self, request, author: str, slug: str):
        reject_unknown(request.query_params, ())
        model_id = f"{author}/{slug}"
        entry = get_model(request.user, model_id)
        if entry is None:
            raise GatewayError(404, f"Model '{model_id}' does not exist", metadata={"model": model_id})
        return Response({"data": model_object(entry)})


class ModelCountView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=[CountQuerySerializer],
        responses={200: CountResponseSerializer},
        operation_id="models_count",
        description="How many models GET /models lists for the calling key (with the same `output_modalities`).",
    )
    def get(self, request):
        _validated(CountQuerySerializer, request)
        params = ModelsQuerySerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        return Response({"data": {"count": list_models(request.user, params.to_query())[1]}})


class ZdrEndpointsView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        responses={200: ZdrEndpointsResponseSerializer},
        operation_id="endpoints_zdr_list",
        description="Every endpoint the calling key may use whose provider keeps zero data, by model, in routing "
        "order, with its uptime, latency and throughput on this gateway's recent traffic.",
    )
    def get(self, request):
        reject_unknown(request.query_params, ())
        pairs = [
            (entry, endpoint, candidate)
            for entry in visible_models(request.user)
            for endpoint, candidate in entry.endpoints
            if candidate.zdr
        ]
        traffic = endpoint_traffic(endpoint.id for _, endpoint, _ in pairs)
        return Response({"data": [endpoint_object(e, ep, c, traffic[ep.id]) for e, ep, c in pairs]})


class ProvidersView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        responses={200: ProvidersResponseSerializer},
        operation_id="providers_list",
        description="The providers serving at least one model the calling key may use: slug (as `provider.only` "
        "and guardrails name it), name, data policy and regions from the catalog.",
    )
    def get(self, request):
        reject_unknown(request.query_params, ())
        providers = {}
        for entry in visible_models(request.user):
            for endpoint, _ in entry.endpoints:
                providers.setdefault(endpoint.provider.slug, endpoint.provider)
        return Response({"data": [_provider(providers[slug]) for slug in sorted(providers)]})


def _provider(provider) -> dict:
    return {
        "slug": provider.slug,
        "name": provider.name,
        "privacy_policy_url": None,
        "terms_of_service_url": None,
        "status_page_url": None,
        "zdr": provider.zdr,
        "trains_on_data": provider.trains_on_data,
        "publishes_prompts": provider.publishes_prompts,
        "regions": list(provider.regions or ()),
    }


class EmbeddingModelsView(APIView):
    permission_classes = [IsAnyKey]

    @extend_schema(
        parameters=[PageQuerySerializer],
        responses={200: ModelListSerializer},
        operation_id="embeddings_models_list",
        description="The embeddings models the calling key may use (served by `POST /embeddings`), paginated as "
        "GET /models.",
    )
    def get(self, request):
        page = _validated(PageQuerySerializer, request).page()
        query = ModelQuery(output_modalities=frozenset({EMBEDDINGS}), **page)
        models, total = list_models(request.user, query)
        return Response(model_list(models, total, query, request.query_params, f"{API_PREFIX}/embeddings/models"))
