"""Precision and recall of every built-in detector on the labelled corpora under tests/guardrails/corpus/.

A positive line counts as found only when the detector's spans cover the whole expected substring (what a
redaction must hide); a negative line counts as a false positive when the detector finds anything.
`detectors.tsv` is the corpus the detectors were developed against; `heldout.tsv` was written afterwards
and evaluated once. Print the table with `pytest tests/guardrails/test_detector_corpus.py -s`.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from textscan.detectors import DETECTORS

CORPUS = Path(__file__).parent / "corpus"
# (precision, recall) floors per corpus; figures are reported in docs/guardrails.md.
FLOORS = {"detectors.tsv": (0.95, 0.90), "heldout.tsv": (0.60, 0.70)}


def load(name: str) -> list[tuple[str, str | None, str]]:
    rows = []
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        detector, expected, text = line.split("\t")
        rows.append((detector, None if expected == "-" else expected, text))
    return rows


def score(rows) -> dict[str, tuple[float, float, Counter]]:
    counts: dict[str, Counter] = {slug: Counter() for slug in DETECTORS}
    for detector, expected, text in rows:
        spans = DETECTORS[detector](text)
        if expected is None:
            counts[detector]["fp" if spans else "tn"] += 1
            continue
        start = text.index(expected)
        covered = all(any(a <= i < b for a, b in spans) for i in range(start, start + len(expected)))
        counts[detector]["tp" if covered else "fn"] += 1
    results = {}
    for slug, c in counts.items():
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
        results[slug] = (precision, recall, c)
    return results


def test_corpus_is_large_and_balanced():
    rows = load("detectors.tsv")
    assert len(rows) >= 200
    for slug in DETECTORS:
        positives = sum(1 for d, e, _ in rows if d == slug and e is not None)
        negatives = sum(1 for d, e, _ in rows if d == slug and e is None)
        assert positives >= 10 and negatives >= 10, slug
    for _, expected, text in rows:
        assert expected is None or expected in text


@pytest.mark.parametrize("corpus", sorted(FLOORS))
def test_precision_and_recall_per_detector(corpus):
    results = score(load(corpus))
    min_precision, min_recall = FLOORS[corpus]
    print(f"\n{corpus}")
    for slug, (precision, recall, c) in results.items():
        print(f"{slug:24} precision {precision:.2f} recall {recall:.2f}  ({dict(c)})")
    for slug, (precision, recall, _) in results.items():
        assert precision >= min_precision, (slug, precision)
        assert recall >= min_recall, (slug, recall)


@pytest.mark.parametrize(
    ("slug", "text", "found"),
    [
        ("credit-card", "4111 1111 1111 1111", True),
        ("credit-card", "4111 1111 1111 1112", False),  # Luhn
        ("ssn", "078-05-1120", True),
        ("ssn", "078-05 1120", False),
        ("ip-address", "::1", True),
        ("ip-address", "999.1.1.1", False),
        ("email", "ünïcode@exämple.com", False),
        ("phone", "+1 415 555 2671", True),
    ],
)
def test_detector_edges(slug, text, found):
    assert bool(DETECTORS[slug](text)) is found


ADVERSARIAL = {
    "digit singles": "1 " * 20000,
    "bracketed digits": "(1) " * 20000,
    "phone after phone": "415 555 2671, " * 5000,
    "at signs": "x@" + "a." * 20000,
    "colons": ":" * 40000,
    "capitalized words": "Aa " * 20000,
    "honorifics": "Mr " * 20000,
    "street-like": "12 Main " * 10000,
    "injection phrases": "ignore all " * 10000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_detectors_stay_linear_on_adversarial_text(name):
    text = ADVERSARIAL[name]
    started = time.process_time()
    for detect in DETECTORS.values():
        detect(text)
    assert time.process_time() - started < 3.0  # CPU seconds for every detector on 40-110 KB


def test_phone_checks_are_bounded_and_fail_closed():
    from textscan.detectors.phone import MAX_CHECKS_PER_TEXT

    text = "call 415 555 2671 now, " * (MAX_CHECKS_PER_TEXT + 50)
    assert len(DETECTORS["phone"](text)) == MAX_CHECKS_PER_TEXT + 50
