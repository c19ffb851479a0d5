"""System checks of the observability app."""

from django.core.checks import Warning, register

from gateway_project.encryption import encryption_configured


@register()
def encryption_keys_check(app_configs, **kwargs):
    if encryption_configured():
        return []
    return [
        Warning(
            "GATEWAY_BYOK_ENCRYPTION_KEYS is not set: observability destinations with secret config values "
            "(API keys, passwords, headers) cannot be created.",
            hint="Set GATEWAY_BYOK_ENCRYPTION_KEYS to one or more Fernet keys (`make` writes one into a new .env).",
            id="observability.W001",
        )
    ]
