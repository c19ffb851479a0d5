"""System check: BYOK keys cannot be stored or used without encryption keys, so the service refuses to start.

Registered with the `startup` tag as well: `gateway_project/asgi.py` runs the checks of that tag when the
ASGI application is imported, so `uvicorn gateway_project.asgi:application` fails at once too (runserver,
migrate and `manage.py check` run every check anyway).
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from gateway_project.encryption import EncryptionNotConfigured, fernet

STARTUP_TAG = "startup"


@checks.register(checks.Tags.security, STARTUP_TAG)
def check_encryption_keys(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Error when GATEWAY_BYOK_ENCRYPTION_KEYS is empty outside DEBUG, or holds a value that is not a Fernet key."""
    try:
        fernet()
    except EncryptionNotConfigured as exc:
        configured = any(k.strip() for k in settings.GATEWAY_BYOK_ENCRYPTION_KEYS)
        return [
            checks.Error(
                str(exc),
                hint=(
                    "Generate a key with: python -c 'from cryptography.fernet import Fernet; "
                    "print(Fernet.generate_key().decode())' and set GATEWAY_BYOK_ENCRYPTION_KEYS to it "
                    "(`make run` writes one into .env)."
                ),
                id="byok.E002" if configured else "byok.E001",
            )
        ]
    return []
