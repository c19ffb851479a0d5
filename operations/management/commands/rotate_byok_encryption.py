"""Re-encrypt every stored BYOK key, observability destination secret and stored trace under the first key of
GATEWAY_BYOK_ENCRYPTION_KEYS.

Key rotation: put the new Fernet key first in GATEWAY_BYOK_ENCRYPTION_KEYS (keep the old ones after it),
restart, run this command, then the old keys can be removed.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from byok.services import provider_credentials_reencrypt
from gateway_project.encryption import EncryptionNotConfigured, encryption_configured
from observability.outbox import trace_bodies_reencrypt
from observability.services import destination_secrets_reencrypt


class Command(BaseCommand):
    help = "Re-encrypt every BYOK credential and destination secret under the first encryption key."

    def handle(self, *args, **options):
        if not encryption_configured():
            raise CommandError("GATEWAY_BYOK_ENCRYPTION_KEYS is not set (or holds an invalid key): nothing to do.")
        try:
            result = provider_credentials_reencrypt()
            destinations_rotated, destinations_failed = destination_secrets_reencrypt()
            traces_rotated, traces_failed = trace_bodies_reencrypt()
        except EncryptionNotConfigured as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Re-encrypted {result.rotated} BYOK credential(s) under the first encryption key.")
        self.stdout.write(f"Re-encrypted {destinations_rotated} destination secret config(s).")
        self.stdout.write(f"Re-encrypted {traces_rotated} stored observability trace(s).")
        if traces_failed:
            self.stdout.write(
                f"{traces_failed} stored trace(s) could not be decrypted with any configured key: their deliveries "
                "will go dead."
            )
        failed = [*result.failed, *destinations_failed]
        if failed:
            ids = ", ".join(str(i) for i in failed)
            raise CommandError(
                f"{len(failed)} credential(s) or destination(s) could not be decrypted with any configured key: {ids}. "
                "Add the key they were encrypted with to GATEWAY_BYOK_ENCRYPTION_KEYS and run again."
            )
