from django.apps import AppConfig


class ByokConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "byok"
