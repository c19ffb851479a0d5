"""SDK area `byok` against the live gateway, with the routing switches and declarations."""

from __future__ import annotations

import pytest
from openrouter import errors

from tests.byok.helpers import make_provider


@pytest.fixture
def openai_provider(transactional_db):
    return make_provider("openai")


def test_byok_create_list_get_update_delete(sdk, org, openai_provider):
    created = sdk.byok.create(
        provider="openai", key="sk-test-AbCdEfGh12345678", name="prod", declared_zdr=True, is_required=True,
        allowed_models=["openai/gpt-4o-mini"], declared_region=None,
    ).data  # fmt: skip
    assert created.label == "sk-...5678" and created.name == "prod"
    assert (created.declared_zdr, created.is_required, created.is_byok_only) == (True, True, False)
    assert created.declared_region is None and created.workspace_id == str(org.workspace.id)

    assert [c.id for c in sdk.byok.list(provider="openai").result.data] == [created.id]
    assert sdk.byok.get(id=created.id).data.allowed_models == ["openai/gpt-4o-mini"]

    updated = sdk.byok.update(id=created.id, declared_zdr=None, is_required=False, is_byok_only=True).data
    assert (updated.declared_zdr, updated.is_required, updated.is_byok_only) == (None, False, True)

    assert sdk.byok.delete(id=created.id).DELETED is True
    assert sdk.byok.list().result.data == []


def _error(call) -> errors.OpenRouterError:
    with pytest.raises(errors.OpenRouterError) as raised:
        call()
    assert raised.value.status_code == 400
    return raised.value


def test_byok_only_cannot_be_a_fallback_key(sdk, openai_provider):
    error = _error(lambda: sdk.byok.create(provider="openai", key="sk-test-1", is_byok_only=True, is_fallback=True))
    assert "is_byok_only" in error.body
    created = sdk.byok.create(provider="openai", key="sk-test-2", is_fallback=True).data
    assert "is_byok_only" in _error(lambda: sdk.byok.update(id=created.id, is_byok_only=True)).body


def test_a_region_declaration_is_refused_by_name(sdk, openai_provider):
    error = _error(lambda: sdk.byok.create(provider="openai", key="sk-test-3", declared_region="europe"))
    assert "declared_region" in error.body
