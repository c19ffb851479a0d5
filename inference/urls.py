"""Management-plane routes of the inference app under /api/v1/ (the data plane is routed in asgi.py)."""

from django.urls import path

from inference.views import GenerationView, ModelDetailView, ModelEndpointsView, ModelListView

urlpatterns = [
    path("generation", GenerationView.as_view(), name="generation"),
    path("models", ModelListView.as_view(), name="models-list"),
    path("models/<str:vendor>/<str:name>", ModelDetailView.as_view(), name="models-detail"),
    path("models/<str:vendor>/<str:name>/endpoints", ModelEndpointsView.as_view(), name="models-endpoints"),
]
