"""Raw API key material: generation, hashing and the masked label. Raw keys are never stored."""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "sk-gw-v1-"


def generate_raw_key() -> str:
    """A new raw API key: a fixed prefix and 64 hex characters of randomness."""
    return KEY_PREFIX + secrets.token_hex(32)


def hash_key(raw_key: str) -> str:
    """The key's SHA-256 as 64 lowercase hex characters: its stored form and public id."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def mask_key(raw_key: str) -> str:
    """The label shown for a key: its prefix, `...` and the last 4 characters."""
    head = raw_key[: len(KEY_PREFIX) + 3] if raw_key.startswith(KEY_PREFIX) else raw_key[:4]
    return f"{head}...{raw_key[-4:]}"
