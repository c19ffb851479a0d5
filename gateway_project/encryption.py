"""Encryption at rest of secrets the gateway must be able to read back (BYOK provider keys, destination
secrets): Fernet from `cryptography`, keys from GATEWAY_BYOK_ENCRYPTION_KEYS.

MultiFernet: the first key encrypts, every key decrypts, so keys rotate by putting a new key first and
re-encrypting (`rotate_secret`). Without configured keys in DEBUG a key derived from SECRET_KEY is used so a
development setup works; outside DEBUG, encrypting or decrypting without configured keys raises
`EncryptionNotConfigured` (the apps that store secrets refuse to start on that, see their checks).
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class EncryptionNotConfigured(RuntimeError):
    """GATEWAY_BYOK_ENCRYPTION_KEYS is empty outside DEBUG."""


class DecryptionFailed(RuntimeError):
    """A stored secret cannot be decrypted with any configured key."""


def _derived_development_key() -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(f"gateway-dev:{settings.SECRET_KEY}".encode()).digest())


@lru_cache(maxsize=8)
def _fernet_for(keys: tuple[str, ...], debug: bool, secret_key: str) -> MultiFernet:
    if keys:
        try:
            return MultiFernet([Fernet(k.encode() if isinstance(k, str) else k) for k in keys])
        except (ValueError, TypeError) as exc:
            raise EncryptionNotConfigured(
                "GATEWAY_BYOK_ENCRYPTION_KEYS holds a value that is not a Fernet key "
                "(generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())')"
            ) from exc
    if debug:
        return MultiFernet([Fernet(_derived_development_key())])
    raise EncryptionNotConfigured(
        "GATEWAY_BYOK_ENCRYPTION_KEYS is not set: secrets cannot be stored or read. Set it to one or more "
        "Fernet keys, comma separated (the first one encrypts)."
    )


def fernet() -> MultiFernet:
    keys = tuple(k.strip() for k in settings.GATEWAY_BYOK_ENCRYPTION_KEYS if k.strip())
    return _fernet_for(keys, settings.DEBUG, settings.SECRET_KEY)


def encryption_configured() -> bool:
    try:
        fernet()
    except EncryptionNotConfigured:
        return False
    return True


def encrypt_secret(plaintext: str) -> str:
    """Fernet token (text) of `plaintext`."""
    return fernet().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt_secret(token: str) -> str:
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise DecryptionFailed("stored secret cannot be decrypted with the configured keys") from exc


def rotate_secret(token: str) -> str:
    """Re-encrypt `token` under the first configured key."""
    try:
        return fernet().rotate(token.encode("ascii")).decode("ascii")
    except InvalidToken as exc:
        raise DecryptionFailed("stored secret cannot be decrypted with the configured keys") from exc


def mask_secret(value: str) -> str:
    """First 4 characters, `...`, last 4 (DECISIONS.md §5); short values are fully masked."""
    if len(value) <= 8:
        return "..." if value else ""
    return f"{value[:4]}...{value[-4:]}"
