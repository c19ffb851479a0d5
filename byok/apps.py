from django.apps import AppConfig


class ByokConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "byok"
    verbose_name = "BYOK provider credentials"

    def ready(self) -> None:
        from byok import checks  # noqa: F401  (registers the encryption-key check)
        from byok.models import ProviderCredential
        from gateway_project.policy_cache import watch_models

        watch_models(ProviderCredential)
