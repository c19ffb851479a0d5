"""URL configuration of the management plane (Django + DRF). The data plane's /api/v1/responses is
routed to its Channels consumer in asgi.py before Django sees it."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView

from gateway_project.api.docs_views import RedocPage, SwaggerPage, favicon
from operations.landing import landing

API_APPS = [
    "accounts",
    "guardrails",
    "presets",
    "observability",
    "byok",
    "scim",
    "budgets",
    "rankings",
    "inference",
    "audit",
    "analytics",
    "responsecache",
]

handler404 = "gateway_project.api.middleware.not_found_view"
handler500 = "gateway_project.api.middleware.server_error_view"

urlpatterns = [
    path("", landing, name="landing"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path(
        "api/v1/openapi.json",
        SpectacularJSONAPIView.as_view(authentication_classes=[], permission_classes=[]),
        name="openapi-schema",
    ),
    path(
        "api/v1/docs",
        SwaggerPage.as_view(url_name="openapi-schema", authentication_classes=[], permission_classes=[]),
        name="openapi-docs",
    ),
    path(
        "api/v1/redoc",
        RedocPage.as_view(url_name="openapi-schema", authentication_classes=[], permission_classes=[]),
        name="openapi-redoc",
    ),
    *[path("api/v1/", include(f"{app}.urls")) for app in API_APPS],
]
