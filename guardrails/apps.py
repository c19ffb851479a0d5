from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "guardrails"

    def ready(self) -> None:
        from gateway_project.policy_cache import watch_models
        from guardrails import regions  # noqa: F401  (registers the startup check of the region settings)
        from guardrails.models import Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment

        watch_models(Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment)
        # What the layers below show or apply of a key's guardrails (docs/architecture.md: registries).
        from accounts.key_limits import register_allowed_data_regions, register_budget_layers
        from guardrails import key_facts
        from inference.catalog_selectors import register_key_policy

        register_allowed_data_regions(key_facts.allowed_data_regions)
        register_budget_layers(key_facts.budget_layers)
        register_key_policy(key_facts.key_policy)
