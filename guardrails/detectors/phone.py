"""Phone numbers in international (+CC ...) and national formats, validated by `phonenumbers`
(Google's libphonenumber metadata): a match must be a valid number of its region, not merely digit-shaped.

National formats are tried for each region of settings.GATEWAY_GUARDRAIL_PHONE_REGIONS (default
US, GB, DE, FR); international numbers are recognized whatever the region.
"""

from __future__ import annotations

import re
from functools import lru_cache

import phonenumbers
from django.conf import settings

Span = tuple[int, int]

_DIGIT_RUN = re.compile(r"\d[\d ()./-]{5,}\d")
# A national number in most of Europe starts with a trunk 0; without one, only the first region is tried.
_TRUNK_ZERO = re.compile(r"(?<![\d+])\(?0\d")


@lru_cache(maxsize=1)
def _regions() -> tuple[str, ...]:
    regions = getattr(settings, "GATEWAY_GUARDRAIL_PHONE_REGIONS", None) or ["US", "GB", "DE", "FR"]
    return tuple(r.strip().upper() for r in regions if r.strip())


def _matches(text: str, region: str) -> list[Span]:
    matcher = phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID, max_tries=200)
    return [(m.start, m.end) for m in matcher]


def find_phone_numbers(text: str) -> list[Span]:
    if sum(c.isdigit() for c in text) < 7 or not _DIGIT_RUN.search(text):
        return []
    regions = _regions()
    spans = set(_matches(text, regions[0]))
    if len(regions) > 1 and _TRUNK_ZERO.search(text):
        for region in regions[1:]:
            spans.update(_matches(text, region))
    return _without_nested(sorted(spans))


def _without_nested(spans: list[Span]) -> list[Span]:
    kept: list[Span] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return kept
