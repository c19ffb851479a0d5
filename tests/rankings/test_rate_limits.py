"""Rate limits of the rankings dataset: 30/minute per key, 500/day per organization, 429 + Retry-After."""

import pytest
import time_machine

from accounts import services
from rankings import rate_limits

pytestmark = pytest.mark.django_db
URL = "/api/v1/datasets/rankings-daily"


@pytest.fixture(autouse=True)
def _isolated_redis_namespace(settings, request):
    if settings.REDIS_URL:
        from gateway_project.policy_cache import _redis_sync

        client = _redis_sync()
        for key in client.scan_iter("ratelimit:*"):
            client.delete(key)


@time_machine.travel("2026-03-10 12:00:10Z", tick=False)
def test_per_key_limit_then_retry_after(org):
    client = org.client(org.inference_key)
    for _ in range(30):
        assert client.get(URL).status_code == 200
    response = client.get(URL)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == 429
    assert response["Retry-After"] == "50"
    assert org.client().get(URL).status_code == 200  # another key of the organization still passes


def test_per_key_window_resets(org):
    client = org.client(org.inference_key)
    with time_machine.travel("2026-03-10 12:00:59Z", tick=False):
        for _ in range(30):
            client.get(URL)
        assert client.get(URL).status_code == 429
    with time_machine.travel("2026-03-10 12:01:00Z", tick=False):
        assert client.get(URL).status_code == 200


@time_machine.travel("2026-03-10 23:59:30Z", tick=False)
def test_per_organization_daily_limit(org, monkeypatch):
    monkeypatch.setattr(rate_limits, "PER_ORG_PER_DAY", 5)
    keys = [services.api_key_create(organization=org.organization, name=f"k{i}").raw_key for i in range(2)]
    statuses = [org.client(keys[i % 2]).get(URL).status_code for i in range(7)]
    assert statuses == [200] * 5 + [429, 429]
    response = org.client(keys[0]).get(URL)
    assert response.status_code == 429 and response["Retry-After"] == "30"
    assert "per day per organization" in response.json()["error"]["message"]
