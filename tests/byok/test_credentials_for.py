"""inference.credentials.credentials_for: which keys an attempt uses, in which order (DECISIONS.md §6)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from accounts import services as account_services
from accounts.principal import load_principal
from byok import routing
from byok.models import ProviderCredential
from byok.services import provider_credential_create
from inference.credentials import credentials_for
from tests.byok.helpers import make_candidate, make_context, make_provider

pytestmark = pytest.mark.django_db

PLATFORM_KEY = "platform-key-0123456789"


@pytest.fixture(autouse=True)
def setup(monkeypatch, db):
    routing.clear_caches()
    monkeypatch.setenv("BYOK_TEST_PLATFORM_KEY", PLATFORM_KEY)
    make_provider("openai")
    make_provider("anthropic")
    yield
    routing.clear_caches()


def add(org, raw_key, *, workspace="default", provider="openai", **kwargs):
    return provider_credential_create(
        organization=org.organization,
        provider=provider,
        raw_key=raw_key,
        workspace=org.workspace if workspace == "default" else workspace,
        **kwargs,
    )


def keys_for(org, candidate=None, *, key_hash=None, version=1):
    principal = load_principal(key_hash or org.inference_hash)
    credentials = async_to_sync(credentials_for)(make_context(principal, version), candidate or make_candidate())
    return [(c.api_key, c.is_byok) for c in credentials]


def test_without_byok_the_platform_key_alone(org):
    assert keys_for(org) == [(PLATFORM_KEY, False)]


def test_without_byok_and_without_platform_key_nothing(org, monkeypatch):
    monkeypatch.delenv("BYOK_TEST_PLATFORM_KEY")
    assert keys_for(org) == []


def test_non_fallback_by_sort_order_then_fallback_then_platform(org):
    add(org, "byok-fallback-0", is_fallback=True, sort_order=0)
    add(org, "byok-second", sort_order=5)
    add(org, "byok-first", sort_order=1)
    add(org, "byok-fallback-1", is_fallback=True, sort_order=3, workspace=None)
    assert keys_for(org) == [
        ("byok-first", True),
        ("byok-second", True),
        ("byok-fallback-0", True),
        ("byok-fallback-1", True),
        (PLATFORM_KEY, False),
    ]


def test_credentials_carry_their_id_and_label(org):
    credential = add(org, "sk-label-check-1234567890WXYZ")
    principal = load_principal(org.inference_hash)
    first = async_to_sync(credentials_for)(make_context(principal), make_candidate())[0]
    assert first.byok_id == credential.id and first.label == "sk-...WXYZ" and first.is_byok
    assert "sk-label-check" not in repr(first)


def test_disabled_other_provider_other_workspace_and_other_organization_are_not_used(org, other_org):
    team = account_services.workspace_create(organization=org.organization, name="Team")
    add(org, "disabled", disabled=True)
    add(org, "anthropic-key", provider="anthropic")
    add(org, "team-workspace", workspace=team)
    add(other_org, "other-org")
    add(org, "global-key", workspace=None)
    assert keys_for(org) == [("global-key", True), (PLATFORM_KEY, False)]
    assert keys_for(org, make_candidate("anthropic", "anthropic/claude-sonnet-4")) == [
        ("anthropic-key", True),
        (PLATFORM_KEY, False),
    ]


def test_key_hash_restriction(org):
    management = org.management_hash
    add(org, "only-mgmt", allowed_api_key_hashes=[management])
    add(org, "only-inference", allowed_api_key_hashes=[org.inference_hash])
    assert keys_for(org) == [("only-inference", True), (PLATFORM_KEY, False)]
    assert keys_for(org, key_hash=management) == [("only-mgmt", True), (PLATFORM_KEY, False)]


def test_model_restriction_matches_the_slug_or_the_canonical_slug(org):
    add(org, "mini-only", allowed_models=["openai/gpt-4o-mini"])
    add(org, "canonical", allowed_models=["openai/gpt-4o-mini-2024-07-18"])
    add(org, "gpt-41-only", allowed_models=["openai/gpt-4.1"])
    add(org, "none-allowed", allowed_models=[])
    assert keys_for(org) == [("mini-only", True), ("canonical", True), (PLATFORM_KEY, False)]
    assert keys_for(org, make_candidate(model_slug="openai/gpt-4.1")) == [("gpt-41-only", True), (PLATFORM_KEY, False)]


def test_user_restriction_uses_the_key_creator(org):
    other = account_services.user_create(organization=org.organization, username="someone-else")
    add(org, "admin-only", allowed_user_ids=[str(org.admin.id)])
    add(org, "other-only", allowed_user_ids=[str(other.id)])
    assert keys_for(org) == [("admin-only", True), (PLATFORM_KEY, False)]
    orphan = account_services.api_key_create(organization=org.organization, name="no creator")
    assert keys_for(org, key_hash=orphan.api_key.hash) == [(PLATFORM_KEY, False)]


def test_changes_apply_with_the_next_policy_version(org):
    credential = add(org, "old-key")
    assert keys_for(org, version=1)[0] == ("old-key", True)
    from byok.services import provider_credential_update

    provider_credential_update(credential=credential, data={}, raw_key="new-key")
    assert keys_for(org, version=2)[0] == ("new-key", True)
    provider_credential_update(credential=credential, data={"disabled": True})
    assert keys_for(org, version=3) == [(PLATFORM_KEY, False)]


def test_only_the_credentials_that_apply_are_decrypted(org, monkeypatch):
    for i in range(3):
        add(org, f"restricted-{i}", allowed_models=["x/other"])
    add(org, "usable")
    calls = []
    original = routing.decrypt_secret

    def counting(token):
        calls.append(token)
        return original(token)

    monkeypatch.setattr(routing, "decrypt_secret", counting)
    assert keys_for(org, version=7)[0] == ("usable", True)
    assert len(calls) == 1
    keys_for(org, version=7)
    assert len(calls) == 1, "decrypted again within the same policy version"


def test_a_credential_that_cannot_be_decrypted_is_skipped(org, settings):
    add(org, "lost-key")
    from cryptography.fernet import Fernet

    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    assert keys_for(org) == [(PLATFORM_KEY, False)]
    assert ProviderCredential.objects.count() == 1
