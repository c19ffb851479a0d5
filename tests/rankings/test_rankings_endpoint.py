"""GET /api/v1/datasets/rankings-daily: query rules, the top-50 cut, ordering, buckets, errors."""

from datetime import date

import pytest
import time_machine
from rest_framework.test import APIClient

from rankings.aggregation import rank_daily_totals
from rankings.models import AggregatedDay, DailyModelTokens, DailyModelTotal, WeeklySampledTokens

pytestmark = pytest.mark.django_db
URL = "/api/v1/datasets/rankings-daily"


def _total(day, slug, tokens):
    """A daily total as aggregate_rankings writes it (exact split row, total row, ranks of the day)."""
    DailyModelTotal.objects.create(date=day, model_permaslug=slug, total_tokens=tokens)
    DailyModelTokens.objects.create(
        date=day, model_permaslug=slug, context_bucket="1K", total_tokens=tokens, requests=1
    )
    rank_daily_totals(day)


def _get(client, **params):
    return client.get(URL, params)


def test_any_valid_key_and_401_without(org, rankings_client):
    assert _get(rankings_client).status_code == 200
    assert _get(org.client()).status_code == 200
    response = APIClient().get(URL)
    assert response.status_code == 401 and response.json()["error"]["code"] == 401


@time_machine.travel("2026-03-10 15:00:00Z")
def test_defaults_and_meta(rankings_client):
    AggregatedDay.objects.create(date=date(2026, 3, 9), aggregated_at="2026-03-10T01:02:03.456Z", generations=1)
    body = _get(rankings_client).json()
    assert body["data"] == []
    assert body["meta"] == {
        "as_of": "2026-03-10T01:02:03.456Z",
        "start_date": "2026-02-07",
        "end_date": "2026-03-09",
        "version": "v1",
    }


def test_start_is_clamped_and_echoed(rankings_client):
    body = _get(rankings_client, start_date="2024-06-01", end_date="2025-01-10").json()
    assert body["meta"]["start_date"] == "2025-01-01" and body["meta"]["end_date"] == "2025-01-10"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"end_date": "2024-12-31"}, "end_date"),
        ({"end_date": "2025-02-30"}, "end_date"),
        ({"start_date": "yesterday"}, "start_date"),
        ({"start_date": "2025-03-02", "end_date": "2025-03-01"}, "start_date"),
        ({"period": "year"}, "period"),
        ({"modality": "video"}, "modality"),
        ({"context_bucket": "5K"}, "context_bucket"),
        ({"category": "cooking"}, "category"),
        ({"language_type": "klingon"}, "language_type"),
        ({"category": "legal", "language_type": "natural"}, "category"),
        ({"category": "legal", "modality": "text"}, "category"),
        ({"language_type": "natural", "context_bucket": "1K"}, "language_type"),
        ({"category": "legal", "period": "day"}, "period"),
    ],
)
def test_invalid_queries_are_400_naming_the_parameter(rankings_client, params, field):
    response = _get(rankings_client, **params)
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == field


def test_modality_and_context_bucket_combine(rankings_client):
    DailyModelTokens.objects.create(
        date=date(2026, 1, 5),
        model_permaslug="a/x",
        context_bucket="10K",
        tool_calling=True,
        total_tokens=7,
        requests=1,
    )
    DailyModelTokens.objects.create(
        date=date(2026, 1, 5), model_permaslug="a/y", context_bucket="1K", tool_calling=True, total_tokens=9, requests=1
    )
    rank_daily_totals(date(2026, 1, 5))  # what aggregate_rankings does after writing the day's rows
    for period in ("day", "week"):  # day: the stored ranks; week: grouped from the split rows
        body = _get(
            rankings_client,
            start_date="2026-01-05",
            end_date="2026-01-31",
            modality="tool_calling",
            context_bucket="10K",
            period=period,
        ).json()
        assert body["data"] == [{"date": "2026-01-05", "model_permaslug": "a/x", "total_tokens": "7"}]


def test_filtered_days_are_ranked_at_aggregation_time_with_the_same_cut_and_order(rankings_client):
    day = date(2026, 2, 3)
    for i in range(55):  # 55 models in the 10K bucket, half of them with images in
        DailyModelTokens.objects.create(
            date=day, model_permaslug=f"m/{i:02d}", context_bucket="10K", input_image=i % 2 == 0,
            total_tokens=1000 - i if i != 54 else 1000, requests=1,
        )  # fmt: skip
    DailyModelTokens.objects.create(
        date=day, model_permaslug="m/00", context_bucket="1K", total_tokens=5, requests=1
    )  # another split row of m/00: it counts for `text` but not for `c=10K`
    rank_daily_totals(day)
    data = _get(rankings_client, start_date="2026-02-03", end_date="2026-02-03", context_bucket="10K").json()["data"]
    assert [r["model_permaslug"] for r in data[:3]] == ["m/00", "m/54", "m/01"]  # tie at 1000: byte order
    assert data[0]["total_tokens"] == "1000" and len(data) == 51
    assert data[-1] == {
        "date": "2026-02-03",
        "model_permaslug": "other",
        "total_tokens": str(sum(1000 - i for i in range(49, 54))),
    }
    text = _get(rankings_client, start_date="2026-02-03", end_date="2026-02-03", modality="text").json()["data"]
    assert text[0] == {"date": "2026-02-03", "model_permaslug": "m/00", "total_tokens": "1005"}
    both = _get(
        rankings_client, start_date="2026-02-03", end_date="2026-02-03", modality="image", context_bucket="10K"
    ).json()["data"]
    assert len(both) == 28 and {r["model_permaslug"] for r in both} == {f"m/{i:02d}" for i in range(0, 55, 2)}
    assert _get(rankings_client, start_date="2026-02-03", end_date="2026-02-03", modality="audio").json()["data"] == []
    # A day aggregated again replaces its stored ranks.
    DailyModelTokens.objects.filter(date=day).delete()
    rank_daily_totals(day)
    assert (
        _get(rankings_client, start_date="2026-02-03", end_date="2026-02-03", context_bucket="10K").json()["data"] == []
    )


def test_top_50_plus_other_and_ordering_with_ties(rankings_client):
    day = date(2026, 1, 6)
    for i in range(53):
        _total(day, f"m/{i:02d}", 1000 - i)
    _total(day, "tie/b", 5000)
    _total(day, "tie/a", 5000)
    _total(date(2026, 1, 5), "m/early", 1)
    data = _get(rankings_client, start_date="2026-01-05", end_date="2026-01-06").json()["data"]
    assert data[0] == {"date": "2026-01-05", "model_permaslug": "m/early", "total_tokens": "1"}
    day_rows = data[1:]
    assert len(day_rows) == 51
    assert [r["model_permaslug"] for r in day_rows[:3]] == ["tie/a", "tie/b", "m/00"]
    assert day_rows[49]["model_permaslug"] == "m/47"
    assert day_rows[-1] == {
        "date": "2026-01-06",
        "model_permaslug": "other",
        "total_tokens": str((1000 - 48) + (1000 - 49) + (1000 - 50) + (1000 - 51) + (1000 - 52)),
    }
    assert all(isinstance(r["total_tokens"], str) and r["total_tokens"].isdigit() for r in data)
    # The filtered query (computed from the split table) cuts and orders the same way.
    text = _get(rankings_client, start_date="2026-01-05", end_date="2026-01-06", modality="text").json()["data"]
    assert text == data


def test_other_is_omitted_when_the_long_tail_is_empty(rankings_client):
    for i in range(50):
        _total(date(2026, 1, 6), f"m/{i:02d}", 10 + i)
    data = _get(rankings_client, start_date="2026-01-06", end_date="2026-01-06").json()["data"]
    assert len(data) == 50 and all(r["model_permaslug"] != "other" for r in data)


def test_week_and_month_buckets(rankings_client):
    _total(date(2026, 1, 4), "a/x", 1)  # Sunday: ISO week of Monday 2025-12-29
    _total(date(2026, 1, 5), "a/x", 2)  # Monday
    _total(date(2026, 1, 11), "a/x", 4)  # Sunday, same week as the 5th
    _total(date(2026, 2, 1), "a/x", 8)
    week = _get(rankings_client, start_date="2026-01-01", end_date="2026-02-01", period="week").json()["data"]
    assert [(r["date"], r["total_tokens"]) for r in week] == [
        ("2025-12-29", "1"),
        ("2026-01-05", "6"),
        ("2026-01-26", "8"),
    ]
    month = _get(rankings_client, start_date="2026-01-01", end_date="2026-02-01", period="month").json()["data"]
    assert [(r["date"], r["total_tokens"]) for r in month] == [("2026-01-01", "7"), ("2026-02-01", "8")]


def test_sampled_dataset_defaults_to_week_and_buckets_weeks_by_their_start_month(rankings_client):
    for week_start, tokens in ((date(2026, 1, 26), 100), (date(2026, 2, 2), 10)):
        WeeklySampledTokens.objects.create(
            week_start=week_start,
            model_permaslug="a/x",
            dimension="category",
            value="legal",
            sampled_tokens=tokens // 10,
            total_tokens=tokens,
        )
    WeeklySampledTokens.objects.create(
        week_start=date(2026, 2, 2),
        model_permaslug="a/x",
        dimension="category",
        value="finance",
        sampled_tokens=1,
        total_tokens=999,
    )
    body = _get(rankings_client, category="legal", start_date="2026-01-20", end_date="2026-02-03").json()
    assert [(r["date"], r["total_tokens"]) for r in body["data"]] == [("2026-01-26", "100"), ("2026-02-02", "10")]
    # The week of Monday 2026-01-26 runs into February but is bucketed in January, by its start.
    month = _get(
        rankings_client, category="legal", period="month", start_date="2026-01-20", end_date="2026-02-28"
    ).json()["data"]
    assert [(r["date"], r["total_tokens"]) for r in month] == [("2026-01-01", "100"), ("2026-02-01", "10")]
    lang = _get(rankings_client, language_type="natural", start_date="2026-01-20", end_date="2026-02-28").json()
    assert lang["data"] == []
