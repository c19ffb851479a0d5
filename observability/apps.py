from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "observability"

    def ready(self) -> None:
        from gateway_project.policy_cache import watch_models
        from inference.signals import generation_recorded
        from observability import receivers
        from observability.models import Destination

        watch_models(Destination)
        generation_recorded.connect(receivers.on_generation_recorded, dispatch_uid="observability-outbox")
