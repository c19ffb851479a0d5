from django.apps import AppConfig


class InferenceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "inference"

    def ready(self) -> None:
        from gateway_project.policy_cache import watch_models
        from inference.models import Endpoint, Model, Provider

        watch_models(Provider, Model, Endpoint)
