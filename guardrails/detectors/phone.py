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

from guardrails.detectors.patterns import digit_count

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


def find_phone_numbers(text: str) -> list[Span]:
    if digit_count(text) < 7:
        return []
    spans: list[Span] = []
    for m in _CANDIDATE.finditer(text):
        if 7 <= digit_count(m.group()) <= 15:  # E.164 numbers have at most 15 digits
            spans.extend(_snippet_spans(m.group(), m.start()))
    return _without_nested(spans)


def _without_nested(spans: list[Span]) -> list[Span]:
    kept: list[Span] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return kept
