"""ASGI entry point: the data plane's Channels consumers first, Django (management plane, admin) for the rest.

Serve with `uvicorn gateway_project.asgi:application --lifespan on --timeout-graceful-shutdown 30` (production;
see docs/performance.md) or daphne via `runserver`.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
django_asgi_app = get_asgi_application()

from gateway_project import request_connections  # noqa: E402

# A management request's connection is closed when it ends: its thread ends with it (request_connections.py).
request_connections.connect()

from django.core import checks  # noqa: E402
from django.core.management.base import SystemCheckError  # noqa: E402

# Refuse to serve on a configuration error that checks tagged `startup` report (e.g. missing BYOK encryption keys).
_startup_errors = [m for m in checks.run_checks(tags=["startup"]) if m.is_serious()]
if _startup_errors:
    raise SystemCheckError("The gateway refuses to start:\n" + "\n".join(str(m) for m in _startup_errors))

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402

from gateway_project.lifespan import lifespan  # noqa: E402
from gateway_project.read_deadline import read_deadline  # noqa: E402
from inference.asgi_routes import http_routes, websocket_routes  # noqa: E402
from operations.health import health_app  # noqa: E402
from operations.measure import measured, route_label  # noqa: E402
from operations.metrics_endpoint import metrics_app  # noqa: E402
from operations.static_files import StaticFiles  # noqa: E402

# STATIC_URL (admin, Swagger UI, ReDoc assets) answered by WhiteNoise's index without entering Django.
static_files = StaticFiles(fallback=django_asgi_app)
# Every data-plane route is measured for /metrics and audited when refused (operations/measure.py).
data_plane_routes = [
    re_path(route.pattern.regex.pattern, measured(route.callback, route_label(route.pattern.regex.pattern)))
    for route in http_routes
]

application = ProtocolTypeRouter(
    {
        # A request body not in GATEWAY_REQUEST_READ_TIMEOUT_SECONDS after its head: 408 (read_deadline.py).
        "http": read_deadline(
            URLRouter(
                [
                    *data_plane_routes,
                    re_path(r"^health/(live|ready)/?$", health_app),
                    re_path(r"^metrics/?$", metrics_app),
                    re_path("^" + settings.STATIC_URL.strip("/") + "/", static_files),
                    re_path(r"", django_asgi_app),
                ]
            )
        ),
        "websocket": URLRouter(websocket_routes),
        # Serve with `--lifespan on`: shutdown waits for the accounting of cut requests (gateway_project/lifespan.py).
        "lifespan": lifespan,
    }
)

# The startup heap frozen, young collections less frequent (gateway_project/gc_tuning.py).
from gateway_project import gc_tuning  # noqa: E402

gc_tuning.tune()
