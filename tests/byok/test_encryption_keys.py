"""Encryption keys: the startup check and the `rotate_byok_encryption` command."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError

from byok.checks import check_encryption_keys
from byok.models import ProviderCredential
from byok.services import provider_credential_create
from gateway_project.encryption import decrypt_secret
from tests.byok.helpers import make_provider

ROOT = Path(__file__).resolve().parents[2]


def test_check_fails_without_keys_outside_debug(settings):
    settings.DEBUG = False
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = []
    errors = check_encryption_keys()
    assert [e.id for e in errors] == ["byok.E001"]
    assert "GATEWAY_BYOK_ENCRYPTION_KEYS is not set" in errors[0].msg
    with pytest.raises(SystemCheckError, match="GATEWAY_BYOK_ENCRYPTION_KEYS"):
        call_command("check")


def test_check_fails_on_a_value_that_is_not_a_fernet_key(settings):
    settings.DEBUG = True
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = ["not-a-key"]
    assert [e.id for e in check_encryption_keys()] == ["byok.E002"]


def test_check_passes_with_keys_or_in_debug(settings):
    settings.DEBUG = False
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), Fernet.generate_key().decode()]
    assert check_encryption_keys() == []
    settings.DEBUG = True
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = []
    assert check_encryption_keys() == []


def _import_asgi(keys: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "test-secret",
        "GATEWAY_BYOK_ENCRYPTION_KEYS": keys,
        "DJANGO_SETTINGS_MODULE": "gateway_project.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", "import gateway_project.asgi"], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_the_asgi_application_refuses_to_load_without_keys():
    refused = _import_asgi("")
    assert refused.returncode != 0
    assert "refuses to start" in refused.stderr and "GATEWAY_BYOK_ENCRYPTION_KEYS is not set" in refused.stderr
    assert _import_asgi(Fernet.generate_key().decode()).returncode == 0


@pytest.mark.django_db
def test_rotate_command_reencrypts_under_the_first_key(org, settings):
    make_provider("openai")
    old, new, unknown = (Fernet.generate_key().decode() for _ in range(3))
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [old]
    first = provider_credential_create(
        organization=org.organization, provider="openai", raw_key="sk-one", workspace=None
    )
    second = provider_credential_create(
        organization=org.organization, provider="openai", raw_key="sk-two", workspace=None
    )
    before = dict(ProviderCredential.objects.values_list("id", "key_ciphertext"))

    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new, old]
    out = StringIO()
    call_command("rotate_byok_encryption", stdout=out)
    assert "Re-encrypted 2 BYOK credential(s)" in out.getvalue()
    after = dict(ProviderCredential.objects.values_list("id", "key_ciphertext"))
    assert all(after[i] != before[i] for i in before)

    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new]  # the old key can go now
    assert decrypt_secret(after[first.id]) == "sk-one" and decrypt_secret(after[second.id]) == "sk-two"

    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [unknown]
    lost = provider_credential_create(
        organization=org.organization, provider="openai", raw_key="sk-lost", workspace=None
    )
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new]
    out = StringIO()
    with pytest.raises(CommandError, match=str(lost.id)) as raised:
        call_command("rotate_byok_encryption", stdout=out)
    assert "sk-lost" not in str(raised.value)
    assert "Re-encrypted 2 BYOK credential(s)" in out.getvalue()


@pytest.mark.django_db
def test_rotate_command_refuses_without_keys(settings):
    settings.DEBUG = False
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = []
    with pytest.raises(CommandError, match="GATEWAY_BYOK_ENCRYPTION_KEYS"):
        call_command("rotate_byok_encryption")
