from django.apps import AppConfig


class PresetsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "presets"
