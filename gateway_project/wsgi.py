"""WSGI entry point (management plane only; the data plane needs ASGI)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
application = get_wsgi_application()
