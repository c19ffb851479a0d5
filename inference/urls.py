"""Management-plane routes of the inference app under /api/v1/ (the data plane is routed in asgi.py)."""

from django.urls import path

from inference.router_views import (
    EmbeddingModelsView,
    ModelBySlugView,
    ModelCountView,
    ProvidersView,
    ZdrEndpointsView,
)
from inference.views import GenerationView, ModelDetailView, ModelEndpointsView, ModelListView

urlpatterns = [
    path("generation", GenerationView.as_view(), name="generation"),
    path("models", ModelListView.as_view(), name="models-list"),
    path("models/count", ModelCountView.as_view(), name="models-count"),
    path("model/<str:author>/<str:slug>", ModelBySlugView.as_view(), name="model-by-slug"),
    path("endpoints/zdr", ZdrEndpointsView.as_view(), name="endpoints-zdr"),
    path("providers", ProvidersView.as_view(), name="providers"),
    path("embeddings/models", EmbeddingModelsView.as_view(), name="embeddings-models"),
    path("models/<str:vendor>/<str:name>", ModelDetailView.as_view(), name="models-detail"),
    path("models/<str:vendor>/<str:name>/endpoints", ModelEndpointsView.as_view(), name="models-endpoints"),
]
