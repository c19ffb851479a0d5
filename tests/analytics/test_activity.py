"""GET /api/v1/activity: the organization's Generation rows, newest first, filtered and paginated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from openrouter import OpenRouter

from tests.analytics.conftest import make_generation
from tests.inference.conftest import generations

pytestmark = pytest.mark.django_db(transaction=True)


def test_rows_are_the_generation_records(gateway_server, org, other_org, openai_sdk):
    first = openai_sdk.responses.create(model="echo/echo-1", input="one")
    second = openai_sdk.responses.create(model="echo/echo-1", input="two three")
    generations(2)
    headers = {"Authorization": f"Bearer {org.management_key}"}
    answer = httpx.get(f"{gateway_server.url}/api/v1/activity", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["total_count"] == 2
    assert [row["id"] for row in body["data"]] == [second.id.removeprefix("resp_"), first.id.removeprefix("resp_")]
    lookup = httpx.get(
        f"{gateway_server.url}/api/v1/generation", params={"id": first.id}, headers=headers, timeout=30
    ).json()["data"]
    row = body["data"][1]
    from inference.serializers import GenerationSerializer

    own = GenerationSerializer().fields  # the row's fields (/generation adds the router API's names to them)
    assert {name: row[name] for name in own} == {name: lookup[name] for name in own}  # as /generation?id=
    assert (row["requests"], row["prompt_tokens"], row["provider_name"]) == (1, lookup["tokens_prompt"], "echo")
    assert row["date"] == lookup["created_at"][:10] and row["usage"] == pytest.approx(lookup["total_cost"])

    other = httpx.get(
        f"{gateway_server.url}/api/v1/activity", headers={"Authorization": f"Bearer {other_org.management_key}"}
    ).json()
    assert other == {"data": [], "total_count": 0}
    assert (
        httpx.get(
            f"{gateway_server.url}/api/v1/activity", headers={"Authorization": f"Bearer {org.inference_key}"}
        ).status_code
        == 403
    )

    # the public API's SDK reads the rows as its activity items
    with OpenRouter(api_key=org.management_key, server_url=f"{gateway_server.url}/api/v1", retry_config=None) as sdk:
        items = sdk.analytics.get_user_activity(request={"api_key_hash": org.inference_hash}).data
        assert [(i.model, i.requests, i.provider_name) for i in items] == [("echo/echo-1", 1, "echo")] * 2
        assert sdk.analytics.get_user_activity(request={"date_": "2020-01-01"}).data == []
        grouped = sdk.analytics.get_user_activity(
            request={"group_by": "workspace", "workspace_id": str(org.workspace.id)}
        ).data
        assert {i.workspace_id for i in grouped} == {str(org.workspace.id)}


def test_filters_and_pagination(org):
    day = datetime(2026, 5, 4, 12, tzinfo=UTC)
    make_generation(org, at=day, model="demo/a")
    make_generation(org, at=day + timedelta(hours=1), model="demo/b", status="failed")
    make_generation(org, at=day + timedelta(days=1), model="demo/a", provider="other")
    client = org.client()

    def ids(**params):
        answer = client.get("/api/v1/activity", params)
        assert answer.status_code == 200, answer.content
        return [(row["model"], row["status"], row["provider"]) for row in answer.json()["data"]]

    assert ids() == [("demo/a", "completed", "other"), ("demo/b", "failed", "demo"), ("demo/a", "completed", "demo")]
    assert ids(model="demo/a") == [("demo/a", "completed", "other"), ("demo/a", "completed", "demo")]
    assert ids(status="failed") == [("demo/b", "failed", "demo")]
    assert ids(provider="other") == [("demo/a", "completed", "other")]
    assert ids(date="2026-05-04") == [("demo/b", "failed", "demo"), ("demo/a", "completed", "demo")]
    assert ids(start="2026-05-04T13:00:00Z", end="2026-05-05T00:00:00Z") == [("demo/b", "failed", "demo")]
    assert len(ids(api_key_hash=org.inference_hash)) == 3 and ids(api_key_hash="0" * 64) == []
    assert len(ids(workspace_id=str(org.workspace.id))) == 3
    page = client.get("/api/v1/activity", {"limit": 1, "offset": 1}).json()
    assert page["total_count"] == 3 and [r["model"] for r in page["data"]] == ["demo/b"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"colour": "red"}, "colour"),
        ({"status": "done"}, "status"),
        ({"date": "2026-13-01"}, "date"),
        ({"date": "2026-05-01", "start": "2026-05-01T00:00:00Z"}, "date"),
        ({"start": "2026-05-02T00:00:00Z", "end": "2026-05-01T00:00:00Z"}, "end"),
        ({"workspace_id": "not-a-uuid"}, "workspace_id"),
        ({"group_by": "model"}, "group_by"),
        ({"limit": "1000"}, "limit"),
    ],
)
def test_invalid_filters_name_the_parameter(org, params, field):
    answer = org.client().get("/api/v1/activity", params)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["metadata"]["field"] == field


def test_total_count_read_from_the_rollups_is_exact(org, other_org):
    """total_count sums the rollups for whole hours and counts the rows of partial hours; it must equal the number
    of rows the filters select, whatever the bounds (on, off and within hours, across days) and filters."""
    from tests.analytics.test_usage_api import _batch

    start = datetime(2026, 6, 1, 22, tzinfo=UTC)
    rows = _batch(org, [start + timedelta(minutes=13 * i) for i in range(300)], user=org.admin)  # 2.7 days, one batch
    rows += _batch(org, [start + timedelta(hours=5, minutes=i) for i in range(20)], user=None)
    _batch(other_org, [start + timedelta(minutes=17 * i) for i in range(50)])  # another organization's rows
    client = org.client()
    workspace, key = str(org.workspace.id), org.inference_hash

    def stamp(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    cases = [
        {},
        {"start": "2026-06-02T00:00:00Z"},
        {"end": "2026-06-03T05:00:00Z"},
        {"start": "2026-06-01T22:30:00Z", "end": "2026-06-03T07:45:10Z"},
        {"start": "2026-06-02T05:10:00Z", "end": "2026-06-02T05:50:00Z"},  # within one hour
        {"start": "2026-06-02T05:10:00Z", "end": "2026-06-02T06:50:00Z"},  # two partial hours, no whole one
        {"start": "2026-06-01T23:00:00Z", "end": "2026-06-04T01:00:00Z"},
        {"date": "2026-06-02"},
        {"model": "demo/b"},
        {"status": "failed", "start": "2026-06-02T03:20:00Z"},
        {"provider": "p2", "end": "2026-06-03T12:00:00Z"},
        {"api_key_hash": key, "start": "2026-06-02T10:00:00Z", "end": "2026-06-02T10:30:00Z"},
        {"workspace_id": workspace, "date": "2026-06-03"},
        {"user_id": str(org.admin.id), "end": "2026-06-02T05:30:00Z"},
        {"model": "demo/a", "status": "completed", "start": "2026-06-02T01:01:00Z"},  # two dimensions: COUNT(*)
        {"start": "2026-07-01T00:00:00Z"},
    ]

    def selected(params: dict) -> list:
        low = params.get("start") or (params.get("date") and params["date"] + "T00:00:00Z")
        high = params.get("end") or (
            params.get("date") and stamp(datetime.fromisoformat(params["date"]).replace(tzinfo=UTC) + timedelta(days=1))
        )
        fields = {"model": "model", "status": "status", "provider": "provider", "api_key_hash": "key_hash",
                  "workspace_id": "workspace_id", "user_id": "user_id"}  # fmt: skip
        return [
            r
            for r in rows
            if (not low or stamp(r.created_at) >= low)
            and (not high or stamp(r.created_at) < high)
            and all(str(getattr(r, fields[name])) == value for name, value in params.items() if name in fields)
        ]

    for params in cases:
        answer = client.get("/api/v1/activity", {**params, "limit": 1})
        assert answer.status_code == 200, answer.content
        expected = selected(params)
        assert answer.json()["total_count"] == len(expected), params
        if expected:
            newest = max(expected, key=lambda r: (r.created_at, r.id))
            assert answer.json()["data"][0]["id"] == str(newest.id), params
