from django.apps import AppConfig


class PresetsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "presets"

    def ready(self) -> None:
        from gateway_project.policy_cache import watch_models
        from presets.models import Preset, PresetVersion

        watch_models(Preset, PresetVersion)
