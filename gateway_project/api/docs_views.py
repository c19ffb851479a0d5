"""The API documentation pages (Swagger UI at /api/v1/docs, ReDoc at /api/v1/redoc) and /favicon.ico.

- Nothing is loaded from outside: the bundles come from drf-spectacular-sidecar's static files, the ReDoc page
  loads no web font (operations/templates/drf_spectacular/redoc.html), and a `Content-Security-Policy` allows
  only the gateway's own origin (plus `data:` images and fonts, and the `blob:` worker ReDoc starts), so the
  logo the ReDoc bundle asks `cdn.redoc.ly` for, or anything else a bundle might reach for, is never fetched.
- OPTIONS answers 200 with `Allow` (DRF would render its description through the page's HTML template, which
  has none: a 500).
- `/favicon.ico` redirects to the static favicon (operations/static/favicon.ico), which the admin and the
  documentation pages also link.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'self'; "
    "base-uri 'self'; form-action 'self'"
)


class DocsPage:
    """What both documentation pages add to drf-spectacular's views."""

    def options(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponse:
        return HttpResponse(status=200, headers={"Allow": ", ".join(self.allowed_methods)})

    def finalize_response(self, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response


class SwaggerPage(DocsPage, SpectacularSwaggerView):
    pass


class RedocPage(DocsPage, SpectacularRedocView):
    pass


def favicon(request: Any) -> HttpResponsePermanentRedirect:
    return HttpResponsePermanentRedirect(static("favicon.ico"))
