"""aggregate_rankings: exact and sampled datasets, idempotence, resumable ranges."""

from datetime import date
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from rankings.aggregation import aggregate_day
from rankings.models import AggregatedDay, DailyModelTokens, DailyModelTotal, WeeklySampledTokens
from tests.rankings.conftest import add_generation, add_model

pytestmark = pytest.mark.django_db
DAY = date(2026, 3, 4)  # a Wednesday


def _snapshot():
    rows = DailyModelTokens.objects.values_list(
        "date",
        "model_permaslug",
        "context_bucket",
        "output_text",
        "output_image",
        "input_image",
        "input_audio",
        "tool_calling",
        "total_tokens",
        "requests",
    )
    return sorted(rows), sorted(DailyModelTotal.objects.values_list("date", "model_permaslug", "total_tokens"))


def test_day_is_rolled_up_by_dimension_and_only_public_models(org):
    add_model("a/one", canonical="a/one-2026")
    add_model("b/private", public=False)
    add_generation(org, "a/one", DAY, input_tokens=500, output_tokens=50)
    add_generation(org, "a/one", DAY, input_tokens=50_000, output_tokens=100, tool_calls=2)
    add_generation(
        org,
        "a/one",
        DAY,
        input_tokens=10,
        output_tokens=5,
        input_modalities=["text", "image"],
        permaslug="a/one-2026:free",
    )
    add_generation(org, "b/private", DAY, input_tokens=999)
    add_generation(org, "a/one", date(2026, 3, 5), input_tokens=7)
    assert aggregate_day(DAY) == 3
    totals = dict(DailyModelTotal.objects.filter(date=DAY).values_list("model_permaslug", "total_tokens"))
    assert totals == {"a/one-2026": 550 + 50_100, "a/one-2026:free": 15}
    tool_row = DailyModelTokens.objects.get(date=DAY, tool_calling=True)
    assert (tool_row.context_bucket, tool_row.total_tokens) == ("100K", 50_100)
    image_row = DailyModelTokens.objects.get(date=DAY, input_image=True)
    assert image_row.model_permaslug == "a/one-2026:free" and image_row.context_bucket == "1K"


def test_rerunning_a_day_gives_the_same_rows(org):
    add_model("a/one")
    for tokens in (10, 2_000, 20_000):
        add_generation(org, "a/one", DAY, input_tokens=tokens)
    aggregate_day(DAY)
    first = _snapshot()
    aggregate_day(DAY)
    assert _snapshot() == first
    add_generation(org, "a/one", DAY, input_tokens=1)
    aggregate_day(DAY)
    assert DailyModelTotal.objects.get(date=DAY).total_tokens == first[1][0][2] + 11


@override_settings(GATEWAY_RANKINGS_SAMPLE_RATE=0.25)
def test_sampled_dataset_is_weekly_and_upsampled(org):
    add_model("a/one")
    add_generation(
        org, "a/one", date(2026, 3, 2), input_tokens=90, output_tokens=10, category="legal", language_type="natural"
    )
    add_generation(
        org, "a/one", date(2026, 3, 8), input_tokens=40, output_tokens=10, category="legal", language_type="natural"
    )
    add_generation(org, "a/one", DAY, input_tokens=1_000)  # not sampled: no category
    aggregate_day(DAY)
    legal = WeeklySampledTokens.objects.get(dimension="category", value="legal")
    assert legal.week_start == date(2026, 3, 2)
    assert (legal.sampled_tokens, legal.total_tokens) == (150, 600)
    natural = WeeklySampledTokens.objects.get(dimension="language_type", value="natural")
    assert natural.total_tokens == 600


def test_command_ranges_resume_and_validate(org):
    add_model("a/one")
    add_generation(org, "a/one", DAY)
    out = StringIO()
    call_command("aggregate_rankings", "--since", "2026-03-03", "--until", "2026-03-05", "--no-progress", stdout=out)
    assert "Aggregated 3 day(s), 1 generations" in out.getvalue()
    assert AggregatedDay.objects.count() == 3
    out = StringIO()
    call_command("aggregate_rankings", "--since", "2026-03-03", "--until", "2026-03-06", "--no-progress", stdout=out)
    assert "Aggregated 1 day(s)" in out.getvalue() and "skipped 3" in out.getvalue()
    out = StringIO()
    call_command("aggregate_rankings", "--date", "2026-03-04", stdout=out)
    assert "Aggregated 1 day(s), 1 generations" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("aggregate_rankings", "--date", "2026-13-01")
    with pytest.raises(CommandError):
        call_command("aggregate_rankings", "--since", "2026-03-05", "--until", "2026-03-01")


def test_demo_traffic_then_aggregation(org):
    out = StringIO()
    call_command(
        "generate_demo_traffic",
        "--days",
        "2",
        "--per-day",
        "300",
        "--models",
        "20",
        "--until",
        "2026-03-04",
        stdout=out,
    )
    call_command(
        "aggregate_rankings", "--since", "2026-03-03", "--until", "2026-03-04", "--no-progress", stdout=StringIO()
    )
    assert sum(AggregatedDay.objects.values_list("generations", flat=True)) == 600
