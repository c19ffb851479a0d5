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


ROLLUP_FIELDS = ["organization_id", "bucket", "dimension", "value", "requests", "errors", "prompt_tokens",
                 "completion_tokens", "reasoning_tokens", "cached_tokens", "cost"]  # fmt: skip


def _rollup_rows(daily: bool = False):
    """Every row of the hourly (or daily) tier, comparable."""
    from analytics.histogram import BIN_FIELDS
    from analytics.models import UsageDailyRollup, UsageRollup

    model = UsageDailyRollup if daily else UsageRollup
    return sorted(
        tuple(str(v) if not isinstance(v, Decimal) else v.normalize() for v in row)
        for row in model.objects.values_list(*ROLLUP_FIELDS, *BIN_FIELDS)
    )


def _hourly_summed_per_day():
    """The hourly rows added up per UTC day, in the shape of _rollup_rows(daily=True)."""
    from analytics.histogram import BIN_FIELDS
    from analytics.models import UsageRollup

    totals: dict[tuple, list] = {}
    for row in UsageRollup.objects.values_list(*ROLLUP_FIELDS, *BIN_FIELDS):
        organization_id, bucket, dimension, value, *sums = row
        day = bucket.astimezone(UTC).replace(hour=0)
        into = totals.setdefault((organization_id, day, dimension, value), [0] * len(sums))
        for index, amount in enumerate(sums):
            into[index] += amount
    return sorted(
        tuple(str(v) if not isinstance(v, Decimal) else v.normalize() for v in (*key, *sums))
        for key, sums in totals.items()
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

    kept, kept_daily = _rollup_rows(), _rollup_rows(daily=True)
    assert kept_daily and kept_daily == _hourly_summed_per_day()
    for day in {r.created_at.astimezone(UTC).date() for r in rows}:
        rebuild_day(day)
    assert _rollup_rows() == kept and _rollup_rows(daily=True) == kept_daily


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

    from analytics.models import UsageDailyRollup, UsageRollup

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
    kept, kept_daily = _rollup_rows(), _rollup_rows(daily=True)
    assert len(kept_daily) < len(kept) and kept_daily == _hourly_summed_per_day()
    UsageRollup.objects.all().delete()
    UsageDailyRollup.objects.all().delete()
    call_command("rollup_usage", "--since", "2026-02-09", "--until", "2026-02-10")
    assert _rollup_rows() == kept and _rollup_rows(daily=True) == kept_daily
    UsageDailyRollup.objects.all().delete()
    call_command("rollup_usage", "--since", "2026-02-09", "--until", "2026-02-10", "--daily-only")
    assert _rollup_rows(daily=True) == kept_daily
    assert "daily rollup rows" in capsys.readouterr().out
    assert sum(e["requests"] for e in client.get("/api/v1/analytics/usage", {
        "start": "2026-02-09T00:00:00Z", "end": "2026-02-11T00:00:00Z"}).json()["data"]) == 600  # fmt: skip


def _batch(org, moments, **fields):
    """Generation rows at `moments` saved and rolled up as ONE accounting batch (it may span hours and days)."""
    import uuid

    from analytics.rollup import rollup_generations
    from inference.models import Generation

    rows = []
    for i, moment in enumerate(moments):
        row = Generation(
            id=uuid.uuid4(),
            organization=org.organization,
            workspace=org.workspace,
            key_hash=org.inference_hash,
            model=("demo/a", "demo/b", "demo/c")[i % 3],
            provider=("p1", "p2")[i % 2],
            status="failed" if i % 7 == 0 else "completed",
            input_tokens=10 + i,
            output_tokens=i % 13,
            reasoning_tokens=i % 3,
            cached_tokens=i % 5,
            cost=Decimal("0.0001") * (i + 1),
            latency_ms=None if i % 11 == 0 else 37 * i,
            created_at=moment,
            **fields,
        )
        row.save()
        rows.append(row)
    rollup_generations(rows)
    return rows


def test_daily_tier_is_the_sum_of_the_hourly_rows_and_reads_agree(org, monkeypatch):
    from analytics import selectors
    from analytics.models import UsageRollup
    from analytics.rebuild import rebuild_day

    sunday = datetime(2026, 3, 29, 20, tzinfo=UTC)  # batches across midnight, a week and a month boundary
    rows = []
    for batch in range(8):  # until 2026-04-01 06:40
        rows += _batch(org, [sunday + timedelta(hours=batch * 9, minutes=7 * i) for i in range(40)])
    assert _rollup_rows(daily=True) == _hourly_summed_per_day()
    kept, kept_daily = _rollup_rows(), _rollup_rows(daily=True)
    for day in sorted({r.created_at.astimezone(UTC).date() for r in rows}):
        rebuild_day(day)
    assert (_rollup_rows(), _rollup_rows(daily=True)) == (kept, kept_daily)

    client = org.client()

    def usage(**params):
        answer = client.get("/api/v1/analytics/usage", params)
        assert answer.status_code == 200, answer.content
        return answer.json()["data"]

    windows = [
        ("2026-03-29T00:00:00Z", "2026-04-03T00:00:00Z"),  # whole days: the daily tier alone
        ("2026-03-29T21:00:00Z", "2026-04-01T05:00:00Z"),  # hours on both sides of whole days
        ("2026-03-30T03:00:00Z", "2026-03-30T19:00:00Z"),  # within one day: hourly only
        ("2026-03-28T00:00:00Z", "2026-03-31T13:00:00Z"),
    ]
    shapes = [(granularity, group_by) for granularity in ("day", "week", "month") for group_by in (None, "model")]

    def read(window, shape):
        group = {"group_by": shape[1]} if shape[1] else {}
        return usage(start=window[0], end=window[1], granularity=shape[0], **group)

    tiered = {(window, shape): read(window, shape) for window in windows for shape in shapes}
    monkeypatch.setattr(selectors, "tiers", lambda start, end, granularity: [(UsageRollup, start, end)])
    for (window, shape), data in tiered.items():
        assert data == read(window, shape), (window, shape)
        start, end = (datetime.fromisoformat(w.replace("Z", "+00:00")) for w in window)
        inside = [r for r in rows if start <= r.created_at < end]
        assert sum(e["requests"] for e in data) == len(inside) > 0
        assert sum(e["errors"] for e in data) == sum(r.status == "failed" for r in inside)
        assert sum(Decimal(str(e["cost"])) for e in data) == sum(r.cost for r in inside)
    assert [e["bucket"] for e in tiered[(windows[1], ("week", None))]] == [
        "2026-03-23T00:00:00.000Z", "2026-03-30T00:00:00.000Z"]  # fmt: skip
    assert [e["bucket"] for e in tiered[(windows[1], ("month", None))]] == [
        "2026-03-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z"]  # fmt: skip


def test_both_percentiles_in_one_pass_equal_the_reference():
    """`percentiles` (the usage API's hot path: cumulative sum + binary search) equals `percentile` bin by bin."""
    import random

    from analytics.histogram import BINS, percentile, percentiles

    rng = random.Random(19)
    cases = [[0] * BINS, [0] * (BINS - 1) + [3], [0, 0, 0, 0, 2] + [0] * (BINS - 5)]
    for _ in range(5000):
        counts = [rng.choice([0, 0, 0, 1, 2, 5, 100, 12345]) for _ in range(BINS)]
        if rng.random() < 0.3:
            counts = [0] * BINS
            for _ in range(rng.randint(1, 2)):
                counts[rng.randrange(BINS)] = rng.randint(1, 9)
        cases.append(counts)
    for counts in cases:
        assert percentiles(counts, 0.5, 0.95) == (percentile(counts, 0.5), percentile(counts, 0.95)), counts
