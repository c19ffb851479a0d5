"""GET /metrics over a real server: access control, and what the data plane's requests add to each metric."""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.models import DeliveryStatus, OutboxEntry
from tests.budgets.test_e2e import put_budget
from tests.inference.conftest import wait_idle
from tests.inference.test_fallback import KEY_ENV, endpoint

pytestmark = pytest.mark.django_db(transaction=True)


def recorded() -> None:
    """Wait until the gateway recorded every finished request (after its last byte went out)."""
    from operations.measure import active

    wait_idle()
    deadline = time.monotonic() + 10
    while active.count and time.monotonic() < deadline:
        time.sleep(0.005)


def scrape(server_url: str, **headers) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics as {(name, sorted labels): value}."""
    response = httpx.get(f"{server_url}/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def delta(before, after, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.fixture
def gateway(gateway_server, echo_catalog):
    yield gateway_server
    recorded()


@pytest.fixture
def upstream(fake_upstream, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fake-platform")
    return fake_upstream


def test_loopback_is_allowed_by_default_and_others_need_the_token(gateway, settings):
    assert httpx.get(f"{gateway.url}/metrics").status_code == 200
    settings.GATEWAY_METRICS_ALLOWED_CIDRS = ["10.0.0.0/8"]
    refused = httpx.get(f"{gateway.url}/metrics")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == 403
    settings.GATEWAY_METRICS_TOKEN = "scrape-secret"
    missing = httpx.get(f"{gateway.url}/metrics")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    wrong = httpx.get(f"{gateway.url}/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Invalid metrics token"
    assert scrape(gateway.url, Authorization="Bearer scrape-secret")  # the token works from anywhere
    assert httpx.post(f"{gateway.url}/metrics").status_code == 405


def test_requests_tokens_cost_latency_and_statuses(gateway, org):
    before = scrape(gateway.url)
    with httpx.Client(base_url=f"{gateway.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        assert c.post("/responses", json={"model": "echo/echo-1", "input": "a b c"}).status_code == 200
        streamed = c.post("/responses", json={"model": "echo/echo-1", "input": "a b c", "stream": True})
        assert streamed.status_code == 200 and "response.completed" in streamed.text
        assert c.post("/responses", json={"model": "echo/echo-1", "input": 5}).status_code == 400
        assert c.post("/responses", content=b"{not json").status_code == 400
        assert c.post("/responses", json={"model": "nope/nope", "input": "x"}).status_code in (400, 404)
    assert httpx.post(f"{gateway.url}/api/v1/responses", json={"model": "echo/echo-1", "input": "x"}).status_code == 401
    recorded()
    after = scrape(gateway.url)
    route = "/api/v1/responses"
    labels = {"route": route, "model": "echo/echo-1", "provider": "echo", "ingress": "responses"}
    assert delta(before, after, "gateway_requests_total", status="200", **labels) == 2
    assert delta(before, after, "gateway_requests_total", route=route, status="400") >= 2
    assert delta(before, after, "gateway_requests_total", route=route, status="401", model="none") == 1
    # "a b c" -> "Echo: a b c": 3 input and 4 output tokens each time, at the catalog's test prices
    assert delta(before, after, "gateway_tokens_total", model="echo/echo-1", kind="input") == 6
    assert delta(before, after, "gateway_tokens_total", model="echo/echo-1", kind="output") == 8
    assert delta(before, after, "gateway_cost_usd_total", model="echo/echo-1") == pytest.approx(2 * (3e-6 + 8e-6))
    latency = "gateway_request_duration_seconds_count"
    assert delta(before, after, latency, model="echo/echo-1", stream="false") == 1
    assert delta(before, after, latency, model="echo/echo-1", stream="true") == 1
    assert delta(before, after, "gateway_time_to_first_token_seconds_count", model="echo/echo-1") == 1
    assert value(after, "gateway_request_duration_seconds_bucket", model="echo/echo-1", le="+Inf") >= 2
    assert value(after, "gateway_open_streams") == 0


def test_upstream_errors_and_fallbacks(gateway, org, upstream):
    endpoint("t/model", "p-broken", "fail-500", upstream, price="0.000001")
    endpoint("t/model", "p-good", "good", upstream, price="0.000002")
    before = scrape(gateway.url)
    with httpx.Client(base_url=f"{gateway.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        assert c.post("/responses", json={"model": "t/model", "input": "hi"}).status_code == 200
    recorded()
    after = scrape(gateway.url)
    assert delta(before, after, "gateway_upstream_errors_total", provider="p-broken") == 1
    kinds = {
        dict(ls)["kind"] for (n, ls) in after if n == "gateway_upstream_errors_total" and ("provider", "p-broken") in ls
    }
    assert kinds == {"server"}
    assert delta(before, after, "gateway_fallbacks_total", model="t/model", provider="p-broken") == 1
    assert delta(before, after, "gateway_requests_total", status="200", model="t/model", provider="p-good") == 1


def test_budget_refusals_are_counted(gateway, org):
    put_budget(org, "daily", 0.000001)
    before = scrape(gateway.url)
    with httpx.Client(base_url=f"{gateway.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        statuses = [c.post("/responses", json={"model": "echo/echo-1", "input": "a b c"}).status_code for _ in range(3)]
    recorded()
    after = scrape(gateway.url)
    refused = statuses.count(402)
    assert refused >= 2
    assert delta(before, after, "gateway_refusals_total", reason="budget") == refused
    assert delta(before, after, "gateway_requests_total", status="402") == refused


def test_rate_limit_refusals_are_counted(gateway, org):
    response = org.client().patch(f"/api/v1/keys/{org.inference_hash}", {"requests_per_minute": 1}, format="json")
    assert response.status_code == 200
    before = scrape(gateway.url)
    with httpx.Client(base_url=f"{gateway.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        statuses = [c.post("/responses", json={"model": "echo/echo-1", "input": "hi"}).status_code for _ in range(3)]
    recorded()
    after = scrape(gateway.url)
    assert statuses == [200, 429, 429]
    assert delta(before, after, "gateway_refusals_total", reason="rate_limit") == 2
    assert delta(before, after, "gateway_requests_total", status="429", model="none") == 2


def test_open_streams_gauge_counts_a_stream_in_progress(gateway, org, upstream):
    endpoint("t/slow", "p-slow", "slow-stream-300", upstream, api_format="openai-responses")
    upstream.chunk_delay = 0.3
    done = threading.Event()

    def stream():
        with httpx.Client(timeout=30) as client:
            client.post(
                f"{gateway.url}/api/v1/responses",
                json={"model": "t/slow", "input": "hi", "stream": True},
                headers={"Authorization": f"Bearer {org.inference_key}"},
            )
        done.set()

    thread = threading.Thread(target=stream)
    thread.start()
    deadline = time.monotonic() + 10
    seen = 0.0
    while time.monotonic() < deadline and not done.is_set():
        seen = max(seen, value(scrape(gateway.url), "gateway_open_streams"))
        if seen:
            break
        time.sleep(0.05)
    thread.join(30)
    recorded()
    assert seen == 1
    assert value(scrape(gateway.url), "gateway_open_streams") == 0


def test_outbox_backlog_dead_rows_and_queue_depths(gateway, org):
    from django.utils import timezone

    from observability.models import Destination

    destination = Destination.objects.create(
        organization=org.organization,
        workspace=org.workspace,
        name="hook",
        type="webhook",
        config={"url": "http://127.0.0.1:9/hook"},
    )
    now = timezone.now()
    for status, count in ((DeliveryStatus.PENDING, 3), (DeliveryStatus.DEAD, 2), (DeliveryStatus.DELIVERED, 4)):
        for _ in range(count):
            OutboxEntry.objects.create(
                destination=destination, generation_id=uuid.uuid4(), status=status, next_attempt_at=now, payload={}
            )
    samples = scrape(gateway.url)
    assert value(samples, "gateway_outbox_rows", status="pending") == 3
    assert value(samples, "gateway_outbox_rows", status="dead") == 2
    assert value(samples, "gateway_outbox_oldest_age_seconds", status="pending") >= 0
    for queue in ("database_thread", "accounting", "settlements"):
        assert ("gateway_database_queue_depth", (("queue", queue),)) in samples


def test_grafana_dashboard_queries_exactly_the_exposed_metrics(gateway, org):
    import json
    import re
    from pathlib import Path

    with httpx.Client(base_url=f"{gateway.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        c.post("/responses", json={"model": "echo/echo-1", "input": "hi", "stream": True})
    recorded()
    text = httpx.get(f"{gateway.url}/metrics").text
    exposed = {family.name for family in text_string_to_metric_families(text) if family.name.startswith("gateway_")}
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "deploy/grafana/model-gateway.json").read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {re.sub(r"_(total|bucket|count|sum)$", "", name) for q in queries for name in re.findall(r"gateway_\w+", q)}
    assert used == exposed, used ^ exposed
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"])
