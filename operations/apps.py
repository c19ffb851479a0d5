from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operator surfaces: static files under ASGI, health, metrics."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "operations"
