"""Phone numbers in international (+CC ...) and national formats, validated by `phonenumbers`
(Google's libphonenumber metadata): a match must be a valid number of its region, not merely digit-shaped.

A fast regular expression finds phone-shaped runs of at least 7 digits first; libphonenumber's matcher
(leniency VALID) then runs on those runs only, for international numbers (+CC) once, otherwise in each
region of settings.GATEWAY_GUARDRAIL_PHONE_REGIONS (default US, GB, DE, FR) until one matches.
"""

from __future__ import annotations

import re
from functools import lru_cache

import phonenumbers
from django.conf import settings

from textscan.detectors.textindex import anchored_finditer, digit_count, digit_run_starts

Span = tuple[int, int]

_CANDIDATE = re.compile(r"(?<![\w+.-])(?:\+|00)?\(?\d[\d()]*(?:[ .\-/]{1,2}\(?\d[\d()]*\)?){0,6}(?![\w-]|\.\d)")


@lru_cache(maxsize=1)
def _regions() -> tuple[str, ...]:
    regions = getattr(settings, "GATEWAY_GUARDRAIL_PHONE_REGIONS", None) or ["US", "GB", "DE", "FR"]
    return tuple(r.strip().upper() for r in regions if r.strip())


def _snippet_spans(snippet: str, offset: int) -> list[Span]:
    """libphonenumber's matcher (leniency VALID: a valid number, not a date, time or page range) on one run."""
    regions = _regions()[:1] if snippet.startswith("+") else _regions()
    for region in regions:
        matcher = phonenumbers.PhoneNumberMatcher(snippet, region, leniency=phonenumbers.Leniency.VALID, max_tries=20)
        spans = [(offset + m.start, offset + m.end) for m in matcher]
        if spans:
            return spans
    return []


_DIGIT_GROUP = re.compile(r"\d+")


# Past this many libphonenumber checks in one text, further phone-shaped runs count as phone numbers unchecked
# (fail closed: a crafted text of thousands of digit runs costs bounded time and leaks nothing).
MAX_CHECKS_PER_TEXT = 300


def _phone_shaped(snippet: str) -> bool:
    """7-15 digits (E.164 has at most 15) in groups of which at most one (a country or trunk code) is a single
    digit, and either a group of 3+ digits or the 2-digit groups of a 10-11 digit number ("01 42 68 53 00"):
    "1 1 1 1 1 1 1" or "(1) (2) (3)..." never reach libphonenumber, whose matcher costs about 0.1 ms a call."""
    groups = [len(g) for g in _DIGIT_GROUP.findall(snippet)]
    total = sum(groups)
    if not 7 <= total <= 15 or groups.count(1) > 1:
        return False
    return max(groups) >= 3 or total in (10, 11)


def _candidate_starts(text: str) -> list[int]:
    """Where a candidate can start: a digit run's first digit, or the '+', '(' or '+(' right before it (the
    look-behind keeps a candidate from starting inside a run, "00" is itself a run's start)."""
    starts = set()
    for start in digit_run_starts(text):
        starts.update((start - 2, start - 1, start))
    starts.discard(-1)
    starts.discard(-2)
    return sorted(starts)


def find_phone_numbers(text: str) -> list[Span]:
    if digit_count(text) < 7:
        return []
    spans: list[Span] = []
    checks = 0
    for m in anchored_finditer(_CANDIDATE, text, _candidate_starts(text)):
        if not _phone_shaped(m.group()):
            continue
        checks += 1
        if checks > MAX_CHECKS_PER_TEXT:
            spans.append(m.span())
        else:
            spans.extend(_snippet_spans(m.group(), m.start()))
    return _without_nested(spans)


def _without_nested(spans: list[Span]) -> list[Span]:
    kept: list[Span] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return kept
