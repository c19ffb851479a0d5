"""The sampled-dataset classifier: accuracy on the labelled set, and sampling at accounting time."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from inference.models import Generation
from inference.signals import generation_recording
from rankings.classifier import CATEGORIES, classify
from rankings.receivers import is_sampled, prompt_text

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


@pytest.mark.django_db
def test_sampled_generation_is_classified_when_recorded(settings):
    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 1
    generation = Generation(model="a/b")
    ctx = SimpleNamespace(body={"input": "Translate this email into Spanish please"})
    generation_recording.send(sender=Generation, generation=generation, ctx=ctx)
    assert (generation.category, generation.language_type) == ("translation", "natural")
    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 0
    other = Generation(model="a/b")
    generation_recording.send(sender=Generation, generation=other, ctx=ctx)
    assert other.category is None
