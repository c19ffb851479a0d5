"""Budgets through the real ASGI app on a loopback port: 402 envelopes, settled costs, failures, disconnects."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest

from budgets.models import SpendCounter, SpendReservation
from inference.models import Generation
from tests.inference.conftest import add_endpoint, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def priced_echo(transactional_db):
    """Echo endpoint at $0 per prompt token and $0.001 per completion token: cost = output words / 1000."""
    from inference.routing import clear_caches

    clear_caches()
    return add_endpoint("echo/echo-1", "echo", prompt_price="0", completion_price="0.001")


@pytest.fixture
def http(gateway_server, org, priced_echo):
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {org.inference_key}"
        yield client
    wait_idle()


def put_budget(org, interval, limit, **extra):
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/{interval}", {"limit_usd": limit, **extra}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def settled_counter(org, interval="daily") -> SpendCounter:
    """The workspace counter once the gateway finished every request (settlement runs after the answer)."""
    wait_idle()
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval=interval)


def generations() -> list[Generation]:
    """The Generation rows once the gateway finished every request (SQLite: no read while it writes)."""
    wait_idle()
    return list(Generation.objects.order_by("created_at"))


def ask(http, max_output_tokens=4, **extra):
    # "a b c" → "Echo: a b c": 4 output tokens, $0.004; the worst case with max_output_tokens=4 is also $0.004.
    return http.post(
        "/responses", json={"model": "echo/echo-1", "input": "a b c", "max_output_tokens": max_output_tokens, **extra}
    )


def test_requests_pass_until_the_budget_is_spent_then_402_envelope(http, org):
    put_budget(org, "daily", 0.012)
    assert [ask(http).status_code for _ in range(3)] == [200, 200, 200]
    response = ask(http)
    assert response.status_code == 402
    error = response.json()["error"]
    assert error["code"] == 402
    assert error["message"].startswith("Workspace 'default' daily budget of $0.012 exceeded")
    assert "It resets at " in error["message"] and error["metadata"]["budget"]["interval"] == "daily"
    streamed = ask(http, stream=True)  # refused before any stream starts
    assert streamed.status_code == 402 and streamed.headers["content-type"] == "application/json"
    rows = generations()
    assert len(rows) == 3  # refused requests never reached routing
    assert sum(r.cost for r in rows) == Decimal("0.012")
    counter = settled_counter(org)
    assert counter.spent_usd == Decimal("0.012") and not SpendReservation.objects.exists()


def test_reservation_larger_than_the_actual_cost_is_released(http, org):
    put_budget(org, "daily", 0.104)
    first = ask(http, max_output_tokens=100)  # holds $0.100, costs $0.004
    assert first.status_code == 200 and first.json()["usage"]["output_tokens"] == 4
    counter = settled_counter(org)
    assert counter.spent_usd == Decimal("0.004") and counter.reserved_units == 0
    assert ask(http, max_output_tokens=100).status_code == 200  # $0.004 + $0.100 fits only after the release
    assert ask(http, max_output_tokens=100).status_code == 402
    assert settled_counter(org).spent_usd == sum(g.cost for g in generations()) == Decimal("0.008")


def test_failed_upstream_call_costs_nothing(gateway_server, org, fake_upstream, monkeypatch, transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    add_endpoint(
        "fake/fail-500",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0.01",
        completion_price="0.01",
    )
    put_budget(org, "daily", 5)
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        response = client.post(
            "/responses",
            headers={"Authorization": f"Bearer {org.inference_key}"},
            json={"model": "fake/fail-500", "input": "hello", "max_output_tokens": 100},
        )
    assert response.status_code == 502
    assert len(fake_upstream.requests) == 1
    (row,) = generations()
    assert row.status == "failed" and row.cost == 0
    counter = settled_counter(org)
    assert counter.spent_units == 0 and counter.reserved_units == 0


def test_json_client_disconnect_is_charged_its_hold(gateway_server, org, fake_upstream, monkeypatch, transactional_db):
    """The provider was asked and may bill the whole answer: the request is charged its reservation, marked."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    add_endpoint(
        "fake/hang",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0.01",
        completion_price="0.01",
    )
    put_budget(org, "daily", 5)
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=1.0) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(
                "/responses",
                headers={"Authorization": f"Bearer {org.inference_key}"},
                json={"model": "fake/hang", "input": "hello", "max_output_tokens": 100},
            )
    assert fake_upstream.disconnected.wait(10)  # the gateway cancelled the upstream call
    (row,) = generations()
    assert row.status == "cancelled" and row.usage_estimated and row.output_tokens == 100
    counter = settled_counter(org)
    # the worst case: the input bound (JSON bytes of the request + 64 framing) and the 100 output tokens sent
    assert row.input_tokens == len(b'{"model":"fake/hang","input":"hello","max_output_tokens":100}') + 64
    assert row.cost == (row.input_tokens + 100) * Decimal("0.01")
    assert counter.reserved_units == 0 and counter.spent_usd == row.cost
    assert fake_upstream.last.body["max_output_tokens"] == 100
    assert not SpendReservation.objects.exists()


def test_key_limit_change_applies_to_the_next_request(http, org):
    assert ask(http).status_code == 200
    wait_idle()
    response = org.client().patch(f"/api/v1/keys/{org.inference_hash}", {"limit": 0.006}, format="json")
    assert response.status_code == 200, response.content
    # The lifetime limit starts from the key's recorded spend ($0.004): $0.004 + $0.004 > $0.006.
    refused = ask(http)
    assert refused.status_code == 402
    assert refused.json()["error"]["message"].startswith("API key 'inference' limit of $0.006 exceeded")
    assert "It never resets." in refused.json()["error"]["message"]


def test_get_key_reports_usage_and_limit_remaining_that_enforcement_agrees_with(http, org):
    # The requests and the read share one UTC day (tests/budgets/conftest.py waits past midnight when it is
    # closer than MIDNIGHT_MARGIN): at 23:59:59 the daily usage reset between the writes and the read.
    response = org.client().patch(
        f"/api/v1/keys/{org.inference_hash}", {"limit": 0.01, "limit_reset": "daily"}, format="json"
    )
    assert response.status_code == 200
    assert [ask(http).status_code for _ in range(3)] == [200, 200, 402]  # $0.004 + $0.004, then $0.004 > $0.002
    wait_idle()
    key = http.get("/key").json()["data"]
    assert key["usage"] == key["usage_daily"] == key["usage_weekly"] == key["usage_monthly"] == 0.008
    assert key["limit"] == 0.01 and key["limit_remaining"] == pytest.approx(0.002)
    counter = SpendCounter.objects.get(scope="api-key", scope_id=org.inference_hash, interval="daily")
    assert counter.spent_usd == Decimal("0.008") and counter.reserved_units == 0


@pytest.mark.parametrize(
    ("now", "wait", "end"),
    [
        ("2026-11-26T12:00:00", 0.0, "2026-11-27T00:00:00"),
        ("2026-11-26T23:56:59", 0.0, "2026-11-27T00:00:00"),  # 3 min 1 s left: enough
        ("2026-11-26T23:59:59", 1.5, "2026-11-28T00:00:00"),  # the flaky run's second: wait into the next day
        ("2026-11-30T23:58:00", 120.5, "2026-12-02T00:00:00"),  # a month (and week) boundary too
    ],
)
def test_a_budgets_test_never_straddles_utc_midnight(now, wait, end):
    from tests.budgets.conftest import wait_before_test

    got = wait_before_test(datetime.fromisoformat(now).replace(tzinfo=UTC))
    assert got == (wait, datetime.fromisoformat(end).replace(tzinfo=UTC))


def test_unknown_model_fails_as_without_a_budget_and_is_recorded(http, org):
    put_budget(org, "daily", 1)
    response = http.post("/responses", json={"model": "nobody/nothing", "input": "hi"})
    assert response.status_code == 404 and "does not exist" in response.json()["error"]["message"]
    (row,) = generations()
    assert row.status == "failed" and row.error_code == 404 and row.cost == 0
    counter = settled_counter(org)
    assert counter.spent_units == 0 and counter.reserved_units == 0


def test_stream_cut_by_the_client_is_charged_what_accounting_records(
    gateway_server, org, fake_upstream, monkeypatch, transactional_db
):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    add_endpoint(
        "fake/slow-stream-300",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0.01",
        completion_price="0.01",
    )
    put_budget(org, "daily", 5)
    body = {"model": "fake/slow-stream-300", "input": "hello", "max_output_tokens": 100, "stream": True}
    headers = {"Authorization": f"Bearer {org.inference_key}"}
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        with client.stream("POST", "/responses", json=body, headers=headers) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if "response.output_text.delta" in line:
                    break  # the client goes away after the first delta
    assert fake_upstream.disconnected.wait(10)
    (row,) = generations()
    assert row.status == "cancelled"
    assert row.cost > 0  # the tokens streamed before the cut are billed
    counter = settled_counter(org)
    assert counter.reserved_units == 0 and counter.spent_usd == row.cost
    assert not SpendReservation.objects.exists()


def test_byok_spend_counts_toward_the_budget_only_when_included(http, org):
    from byok.services import provider_credential_create

    provider_credential_create(
        organization=org.organization, provider="echo", raw_key="sk-echo-byok-Budget7Kp2Vx9Lm5Qz8W", workspace=None
    )
    put_budget(org, "daily", 0.008)
    for _ in range(3):  # $0.012 of BYOK spend: over the $0.008 budget, but BYOK does not count yet
        response = ask(http)
        wait_idle()  # the hold (taken whatever key will pay) is released once the request settled
        assert response.status_code == 200 and response.json()["usage"]["is_byok"] is True
    counter = settled_counter(org)
    assert counter.spent_units == 0 and counter.byok_spent_usd == Decimal("0.012")
    assert put_budget(org, "daily", 0.008, include_byok_in_budgets=True)["include_byok_in_budgets"] is True
    refused = ask(http)
    assert refused.status_code == 402
    assert refused.json()["error"]["metadata"]["budget"]["spent_usd"] == 0.012


def test_a_refused_hold_comes_before_an_error_of_the_upstream_call(http, org):
    """The hold travels while the upstream call is prepared and is awaited before it; a request that fails on the
    way there (no credentials for its provider: 502) while its hold is refused is answered the 402, not recorded."""
    from inference.routing import clear_caches

    add_endpoint("nokey/model-1", "nokey", api_format="openai-responses", base_url="http://127.0.0.1:9/v1",
                 api_key_env="GATEWAY_TEST_UNSET_KEY", completion_price="0.001")  # fmt: skip
    clear_caches()
    unanswerable = {"model": "nokey/model-1", "input": "a b c", "max_output_tokens": 4}
    first = http.post("/responses", json=unanswerable)
    assert first.status_code == 502 and "No provider credentials" in first.json()["error"]["message"]
    assert len(generations()) == 1  # admitted: the failure is recorded
    put_budget(org, "daily", 0.004)
    assert ask(http).status_code == 200  # spends the budget
    refused = http.post("/responses", json=unanswerable)
    assert refused.status_code == 402, refused.content
    assert refused.json()["error"]["metadata"]["budget"]["interval"] == "daily"
    assert len(generations()) == 2  # the refused request is not recorded
    counter = settled_counter(org)
    assert counter.spent_usd == Decimal("0.004") and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()
