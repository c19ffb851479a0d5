"""The sampled-dataset classifier: accuracy on the labelled set, sampling at accounting time, classification in
the aggregation (not in the accounting transaction)."""

from datetime import UTC
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.utils import timezone

import rankings.classification
import rankings.receivers
import textscan.classifier
from inference.models import Generation
from inference.signals import generation_recording
from rankings.aggregation import week_start_of
from rankings.models import PendingClassification, WeeklySampledTokens
from rankings.receivers import is_sampled, queue_sampled_generations
from tests.inference.conftest import echo_catalog, generations, http  # noqa: F401  (fixtures)
from textscan.classifier import CATEGORIES, classify
from textscan.texts import prompt_text

CORPUS = Path(__file__).with_name("classifier_corpus.tsv")


def _corpus():
    for line in CORPUS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            category, language_type, text = line.split("\t")
            yield category, language_type, text.replace("\\n", "\n")


def test_corpus_covers_every_category():
    rows = list(_corpus())
    assert len(rows) >= 120
    assert {c for c, _, _ in rows} == set(CATEGORIES)


def test_accuracy_on_the_labelled_set():
    rows = list(_corpus())
    category_hits = sum(classify(text).category == category for category, _, text in rows)
    language_hits = sum(classify(text).language_type == language for _, language, text in rows)
    assert category_hits / len(rows) >= 0.9
    assert language_hits / len(rows) >= 0.9


def test_code_makes_the_language_type_programming():
    assert classify("def f(x):\n    return x + 1\nwhy is this slow?").language_type == "programming"
    assert classify("How do I learn to cook pasta?").language_type == "natural"


def test_sampling_is_deterministic_and_close_to_the_rate():
    import uuid

    ids = [uuid.UUID(int=i * 7919) for i in range(20_000)]
    hits = sum(is_sampled(i, 0.1) for i in ids)
    assert 1_800 < hits < 2_200
    assert [is_sampled(i, 0.1) for i in ids[:50]] == [is_sampled(i, 0.1) for i in ids[:50]]
    assert not any(is_sampled(i, 0) for i in ids[:100]) and all(is_sampled(i, 1) for i in ids[:100])


def test_prompt_text_reads_instructions_and_every_input_shape():
    body = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": [{"type": "input_text", "text": "x"}]},
        ],
    }
    assert prompt_text(body) == "Be brief.\nhi\nx"
    assert prompt_text({"input": "plain"}) == "plain"


def _counting(calls):
    def counting_classify(text):
        calls.append(text)
        return classify(text)

    return counting_classify


@pytest.mark.django_db
def test_recording_keeps_a_sampled_prompt_encrypted_and_does_not_classify_it(settings, monkeypatch):
    """The accounting signals only pick the sample: the classifier is not called, the row has no category
    yet, and the prompt waits encrypted for the aggregation."""
    calls = []
    for module in (textscan.classifier, rankings.classification, rankings.receivers):
        monkeypatch.setattr(module, "classify", _counting(calls), raising=False)
    ctx = SimpleNamespace(body={"input": "Translate this email into Spanish please"})
    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 1
    generation = Generation(model="a/b", created_at=timezone.now())
    generation_recording.send(sender=Generation, generation=generation, ctx=ctx)
    queue_sampled_generations(Generation, generations=[generation])  # this app's receiver of generations_recorded
    assert generation.category is None and calls == []
    pending = PendingClassification.objects.get()
    assert pending.generation_id == generation.id and "Spanish" not in pending.text
    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 0
    other = Generation(model="a/b", created_at=timezone.now())
    generation_recording.send(sender=Generation, generation=other, ctx=ctx)
    queue_sampled_generations(Generation, generations=[other])
    assert PendingClassification.objects.count() == 1 and calls == []


def test_a_request_is_classified_by_the_aggregation_not_by_its_accounting(settings, http, monkeypatch):  # noqa: F811
    """Through the loopback server: the accounting write leaves the classifier alone; `aggregate_rankings`
    classifies the sampled request and its category reaches the weekly sampled dataset."""
    calls = []
    for module in (textscan.classifier, rankings.classification, rankings.receivers):
        monkeypatch.setattr(module, "classify", _counting(calls), raising=False)
    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 1
    response = http.post(
        "/responses", json={"model": "echo/echo-1", "input": "Translate this email into Spanish please"}
    )
    assert response.status_code == 200, response.text
    (row,) = generations(1)
    assert (row.category, row.language_type) == (None, None) and calls == []
    assert PendingClassification.objects.filter(generation_id=row.id).exists()

    day = row.created_at.astimezone(UTC).date()
    call_command("aggregate_rankings", "--date", day.isoformat(), stdout=StringIO())
    row.refresh_from_db()
    assert (row.category, row.language_type) == ("translation", "natural") and len(calls) == 1
    assert not PendingClassification.objects.exists()
    sampled = WeeklySampledTokens.objects.get(week_start=week_start_of(day), dimension="category")
    assert (sampled.value, sampled.sampled_tokens) == ("translation", row.input_tokens + row.output_tokens)
