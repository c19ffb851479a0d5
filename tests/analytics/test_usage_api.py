"""GET /api/v1/analytics/usage: hourly rollups kept as generations are recorded, read per bucket and group."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import openai
import pytest

from tests.analytics.conftest import make_generation
from tests.inference.conftest import generations

pytestmark = pytest.mark.django_db(transaction=True)


def _usage(gateway_server, key: str, **params) -> httpx.Response:
    return httpx.get(
        f"{gateway_server.url}/api/v1/analytics/usage",
        params=params,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def _rollup_rows():
    from analytics.models import UsageRollup

    fields = ["organization_id", "bucket", "dimension", "value", "requests", "errors", "prompt_tokens",
              "completion_tokens", "reasoning_tokens", "cached_tokens", "cost"]  # fmt: skip
    from analytics.histogram import BIN_FIELDS

    return sorted(
        tuple(str(v) if not isinstance(v, Decimal) else v.normalize() for v in row)
        for row in UsageRollup.objects.values_list(*fields, *BIN_FIELDS)
    )


def test_requests_through_the_gateway_show_in_usage(gateway_server, org, openai_sdk, failing_model):
    for _ in range(3):
        openai_sdk.responses.create(model="echo/echo-1", input="one two three")
    with openai_sdk.responses.stream(model="echo/echo-1", input="four five") as stream:
        for _ in stream:
            pass
    with pytest.raises(openai.APIStatusError):
        openai_sdk.responses.create(model=failing_model, input="hello")
    rows = generations(5)
    assert len(rows) == 5

    answer = _usage(gateway_server, org.management_key, granularity="hour", group_by="model")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["granularity"] == "hour" and body["group_by"] == "model"
    by_model = {entry["group"]: entry for entry in body["data"]}
    assert set(by_model) == {"echo/echo-1", ""}  # the failed request was served by no model
    echo = by_model["echo/echo-1"]
    echo_rows = [r for r in rows if r.model == "echo/echo-1"]
    assert echo["requests"] == 4 and echo["errors"] == 0 and echo["error_rate"] == 0
    assert echo["prompt_tokens"] == sum(r.input_tokens for r in echo_rows) > 0
    assert echo["completion_tokens"] == sum(r.output_tokens for r in echo_rows) > 0
    assert Decimal(str(echo["cost"])) == sum(r.cost for r in echo_rows)
    assert echo["latency_p50_ms"] is not None and echo["latency_p95_ms"] >= echo["latency_p50_ms"]
    assert echo["bucket"] == rows[0].created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:00:00.000Z")
    failed = by_model[""]
    assert (failed["requests"], failed["errors"], failed["error_rate"]) == (1, 1, 1.0)

    totals = _usage(gateway_server, org.management_key).json()["data"]  # default: 30 days by day, one series
    assert len(totals) == 1 and totals[0]["group"] is None
    assert (totals[0]["requests"], totals[0]["errors"]) == (5, 1)
    assert totals[0]["error_rate"] == pytest.approx(0.2)

    by_key = _usage(gateway_server, org.management_key, group_by="key").json()["data"]
    assert [(e["group"], e["label"], e["requests"]) for e in by_key] == [(org.inference_hash, "inference", 5)]
    by_workspace = _usage(gateway_server, org.management_key, group_by="workspace").json()["data"]
    assert [(e["group"], e["label"]) for e in by_workspace] == [(str(org.workspace.id), org.workspace.slug)]
    by_status = _usage(gateway_server, org.management_key, group_by="status").json()["data"]
    assert {e["group"]: e["requests"] for e in by_status} == {"completed": 4, "failed": 1}
    by_provider = _usage(gateway_server, org.management_key, group_by="provider").json()["data"]
    assert {e["group"]: e["requests"] for e in by_provider} == {"echo": 4, "": 1}

    # what accounting kept equals what a rebuild from the Generation rows computes
    from analytics.rebuild import rebuild_day

    kept = _rollup_rows()
    for day in {r.created_at.astimezone(UTC).date() for r in rows}:
        rebuild_day(day)
    assert _rollup_rows() == kept


def test_other_organizations_and_inference_keys(gateway_server, org, other_org, openai_sdk):
    openai_sdk.responses.create(model="echo/echo-1", input="hi")
    generations(1)
    assert _usage(gateway_server, other_org.management_key).json()["data"] == []
    refused = _usage(gateway_server, org.inference_key)
    assert refused.status_code == 403 and "error" in refused.json()
    assert _usage(gateway_server, "sk-nope").status_code == 401


def test_granularity_buckets_and_percentiles(org):
    monday = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
    at = [monday + timedelta(hours=1), monday + timedelta(days=1, hours=5), monday + timedelta(days=8, hours=23),
          monday + timedelta(days=31)]  # fmt: skip
    for moment in at:
        make_generation(org, at=moment, latency_ms=100)
    # 100 generations in one hour with latencies 10, 20, ..., 1000 ms
    for i in range(1, 101):
        make_generation(org, at=monday + timedelta(hours=2, minutes=i % 60), latency_ms=10 * i, model="demo/b")
    make_generation(org, at=monday + timedelta(hours=2), latency_ms=None, model="demo/b", status="failed")
    client = org.client()

    def usage(**params):
        answer = client.get("/api/v1/analytics/usage", params)
        assert answer.status_code == 200, answer.content
        return answer.json()["data"]

    window = {"start": "2026-03-01T00:00:00Z", "end": "2026-05-01T00:00:00Z"}
    days = usage(**window, granularity="day")
    assert [(e["bucket"], e["requests"]) for e in days] == [
        ("2026-03-02T00:00:00.000Z", 102),
        ("2026-03-03T00:00:00.000Z", 1),
        ("2026-03-10T00:00:00.000Z", 1),
        ("2026-04-02T00:00:00.000Z", 1),
    ]
    weeks = usage(**window, granularity="week")
    assert [(e["bucket"], e["requests"]) for e in weeks] == [
        ("2026-03-02T00:00:00.000Z", 103),
        ("2026-03-09T00:00:00.000Z", 1),
        ("2026-03-30T00:00:00.000Z", 1),
    ]
    months = usage(**window, granularity="month")
    assert [(e["bucket"], e["requests"]) for e in months] == [
        ("2026-03-01T00:00:00.000Z", 104),
        ("2026-04-01T00:00:00.000Z", 1),
    ]
    hours = usage(start="2026-03-02T02:00:00Z", end="2026-03-02T03:00:00Z", granularity="hour", group_by="model")
    assert len(hours) == 1 and hours[0]["group"] == "demo/b"
    b = hours[0]
    assert (b["requests"], b["errors"]) == (101, 1)
    # exact p50 500 ms falls in the bin [500, 750), p95 950 ms in [750, 1000): the estimates stay in those bins
    assert 500 <= b["latency_p50_ms"] < 750 and 750 <= b["latency_p95_ms"] < 1000
    # start is inclusive and end exclusive
    assert usage(start="2026-03-02T01:00:00Z", end="2026-03-02T02:00:00Z", granularity="hour")[0]["requests"] == 1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"granularity": "minute"}, "granularity"),
        ({"group_by": "colour"}, "group_by"),
        ({"since": "2026-01-01T00:00:00Z"}, "since"),
        ({"start": "yesterday"}, "start"),
        ({"start": "2026-01-01T00:30:00Z", "end": "2026-01-02T00:00:00Z"}, "start"),
        ({"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T10:00:01Z"}, "end"),
        ({"start": "2026-01-02T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "end"),
        ({"start": "2025-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z", "granularity": "hour"}, "start"),
    ],
)
def test_invalid_queries_name_the_parameter(org, params, field):
    answer = org.client().get("/api/v1/analytics/usage", params)
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["metadata"]["field"] == field and field in error["message"]


def test_rollup_rebuild_command_and_demo_traffic(org, capsys):
    from django.core.management import call_command

    from analytics.models import UsageRollup

    call_command("generate_demo_traffic", "--days", "2", "--per-day", "300", "--models", "5", "--until", "2026-02-10")
    out = capsys.readouterr().out
    assert "rollup rows" in out
    client = org.client()
    answer = client.get(
        "/api/v1/analytics/usage", {"start": "2026-02-09T00:00:00Z", "end": "2026-02-11T00:00:00Z", "group_by": "model"}
    )
    data = answer.json()["data"]
    assert sum(e["requests"] for e in data) == 600
    assert all(e["latency_p95_ms"] is not None for e in data)
    assert {e["group"] for e in data} <= {f"demo/model-{i:04d}" for i in range(5)}
    kept = UsageRollup.objects.count()
    UsageRollup.objects.all().delete()
    call_command("rollup_usage", "--since", "2026-02-09", "--until", "2026-02-10")
    assert UsageRollup.objects.count() == kept
    assert sum(e["requests"] for e in client.get("/api/v1/analytics/usage", {
        "start": "2026-02-09T00:00:00Z", "end": "2026-02-11T00:00:00Z"}).json()["data"]) == 600  # fmt: skip
