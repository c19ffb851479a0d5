from django.apps import AppConfig


class ByokConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "byok"
    verbose_name = "BYOK provider credentials"

    def ready(self) -> None:
        import byok.checks  # noqa: F401  (registers the encryption-key check)
        from byok import routing
        from byok.models import ProviderCredential
        from gateway_project.policy_cache import watch_models
        from inference.credentials import register_organization_keys

        watch_models(ProviderCredential)
        register_organization_keys(routing)  # the organization's keys, for routing (inference does not import byok)
