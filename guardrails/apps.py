from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "guardrails"

    def ready(self) -> None:
        from gateway_project.policy_cache import watch_models
        from guardrails import regions  # noqa: F401  (registers the startup check of the region settings)
        from guardrails.models import Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment

        watch_models(Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment)
