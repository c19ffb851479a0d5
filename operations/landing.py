"""GET /: what this server is and where to go next, for someone who opens the base address in a browser or
with curl. No authentication, no database access."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, JsonResponse

PYPROJECT = Path(settings.BASE_DIR) / "pyproject.toml"


@cache
def project() -> tuple[str, str | None]:
    """The project's name and version as pyproject.toml declares them (the version is None without the file)."""
    try:
        with PYPROJECT.open("rb") as handle:
            declared = tomllib.load(handle)["project"]
        return declared["name"], declared["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "model-gateway", None


def landing(request: HttpRequest) -> JsonResponse:
    name, version = project()
    return JsonResponse(
        {
            "name": name,
            "version": version,
            "api_base": "/api/v1",
            "links": {
                "admin": "/admin/",
                "api_docs": "/api/v1/docs",
                "api_reference": "/api/v1/redoc",
                "openapi": "/api/v1/openapi.json",
                "health_ready": "/health/ready",
                "health_live": "/health/live",
            },
        },
        json_dumps_params={"indent": 2},
    )
