"""BYOK routing switches through the real data plane, against the loopback fake provider (which records the
key it received): `is_required`, `is_byok_only` and `declared_zdr` (with a ZDR guardrail)."""

from __future__ import annotations

import pytest

from guardrails.models import Guardrail, GuardrailKeyAssignment
from tests.byok.test_routing_upstream import KEY_A, KEY_B, PLATFORM_KEY, add, keys_seen, respond, upstream  # noqa: F401

pytestmark = pytest.mark.slow


def test_is_required_keeps_the_platform_key_away_from_the_models_it_covers(upstream, org):  # noqa: F811
    client, fake = upstream
    add(org, KEY_A, is_required=True, allowed_models=["fakeai/model-a"])
    fake.rejected_keys = {KEY_A}
    response = respond(client, org.inference_key)
    assert response.status_code == 502, response.text
    assert keys_seen(fake) == [KEY_A]  # never the platform key


def test_is_required_for_other_models_leaves_the_platform_key(upstream, org):  # noqa: F811
    client, fake = upstream
    add(org, KEY_A, is_required=True, allowed_models=["fakeai/other-model"])
    assert respond(client, org.inference_key).status_code == 200
    assert keys_seen(fake) == [PLATFORM_KEY]


def test_is_byok_only_keeps_the_platform_key_away_from_every_model(upstream, org):  # noqa: F811
    client, fake = upstream
    add(org, KEY_A, is_byok_only=True, allowed_models=["fakeai/other-model"])
    response = respond(client, org.inference_key)
    assert response.status_code >= 400
    assert keys_seen(fake) == []  # the key does not cover this model, and the platform key is gone


def test_without_switches_the_platform_key_follows_the_byok_keys(upstream, org):  # noqa: F811
    client, fake = upstream
    add(org, KEY_A)
    fake.rejected_keys = {KEY_A}
    assert respond(client, org.inference_key).status_code == 200
    assert keys_seen(fake) == [KEY_A, PLATFORM_KEY]


def _require_zdr(org):
    from inference.routing import clear_caches

    guardrail = Guardrail.objects.create(
        organization=org.organization, workspace=org.workspace, name="zdr", enforce_zdr_other=True
    )
    key = org.organization.api_keys.get(hash=org.inference_hash)
    GuardrailKeyAssignment.objects.create(guardrail=guardrail, api_key=key)
    clear_caches()


def test_declared_zdr_key_serves_zdr_requests_alone_when_the_catalog_says_the_provider_retains(upstream, org):  # noqa: F811
    client, fake = upstream  # the catalog's fakeai is not ZDR
    _require_zdr(org)
    refused = respond(client, org.inference_key)
    assert refused.status_code == 404 and "zero data retention" in refused.json()["error"]["message"]

    add(org, KEY_A, declared_zdr=True)
    add(org, KEY_B)  # undeclared: follows the catalog, so it may not serve a ZDR request
    fake.rejected_keys = {KEY_A}
    response = respond(client, org.inference_key)
    assert keys_seen(fake) == [KEY_A]  # neither KEY_B nor the platform key
    assert response.status_code == 502

    fake.requests.clear()
    fake.rejected_keys = set()
    assert respond(client, org.inference_key).json()["usage"]["is_byok"] is True
    assert keys_seen(fake) == [KEY_A]


def test_declared_non_zdr_key_never_serves_zdr_requests(upstream, org):  # noqa: F811
    from inference.models import Provider

    Provider.objects.filter(slug="fakeai").update(zdr=True)
    client, fake = upstream
    _require_zdr(org)
    add(org, KEY_A, declared_zdr=False)
    assert respond(client, org.inference_key).status_code == 200
    assert keys_seen(fake) == [PLATFORM_KEY]


def test_without_a_zdr_requirement_the_declared_key_comes_first(upstream, org):  # noqa: F811
    client, fake = upstream
    add(org, KEY_B, sort_order=0)
    add(org, KEY_A, declared_zdr=True, sort_order=5)
    fake.rejected_keys = {KEY_A, KEY_B}
    respond(client, org.inference_key)
    assert keys_seen(fake) == [KEY_A, KEY_B, PLATFORM_KEY]
