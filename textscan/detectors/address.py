"""Street addresses, by a tested heuristic over the common postal formats (no model, no download).

- North American and British: house number, optional direction, one to four capitalized (or ordinal)
  street-name words, a street type (Street, St, Avenue, Rd, Blvd, Lane...), then optionally a unit
  (Apt, Suite, Unit, #) and "City, ST 12345" or a UK postcode;
- "PO Box 123" / "P.O. Box 123";
- German-style: a street word ending in -straße/-strasse/-str./-weg/-platz/-gasse/-allee/-ring/-damm followed by
  a house number (and optionally a five-digit postcode and town);
- French-style: house number, street type (rue, avenue, boulevard, place, chemin, allée, impasse, quai) and name.
"""

from __future__ import annotations

import re

from textscan.detectors.textindex import WordSet, anchored_finditer, digit_count, digit_run_starts, occurrences

Span = tuple[int, int]

_STREET_TYPES = (
    r"Street|St|Avenue|Ave|Av|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter|"
    r"Parkway|Pkwy|Highway|Hwy|Circle|Cir|Square|Sq|Trail|Trl|Plaza|Loop|Alley|Crescent|Close|Mews|Grove|"
    r"Gardens|Row|Broadway|Expressway|Turnpike|Pike"
)
_NAME_WORD = r"(?:[A-Z][a-zA-Z'.-]*|\d{1,3}(?:st|nd|rd|th))"
_DIRECTION = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\.?"
_UNIT = r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Floor|Fl|Room|Rm|#)\.?\s*#?\s*[0-9A-Za-z-]{1,6})"
_US_TAIL = r"(?:,?\s+[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+){0,2},?\s+[A-Z]{2}\b\.?(?:\s+\d{5}(?:-\d{4})?)?)"
_UK_POSTCODE = r"(?:,?\s+(?:[A-Z][a-zA-Z]+,?\s+)?[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2})"
_STREET = re.compile(
    rf"(?<![\w-])\d{{1,6}}[A-Za-z]?(?:-\d{{1,4}})?,?\s+(?:{_DIRECTION}\s+)?(?:{_NAME_WORD}\s+){{1,4}}"
    rf"(?:{_STREET_TYPES})\b\.?(?:\s+{_DIRECTION}(?![\w]))?{_UNIT}?(?:{_UK_POSTCODE}|{_US_TAIL})?"
)
_PO_BOX = re.compile(r"\b(?:P\.?\s?O\.?\s?Box|Post Office Box)\s+\d{1,7}\b", re.IGNORECASE)
_GERMAN = re.compile(
    r"\b[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm|ufer|chaussee)"
    r"(?:\s+[A-ZÄÖÜ][\wäöüß-]*)?\s+\d{1,4}[a-z]?\b(?:,?\s+\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+)?"
    r"|\b(?:[A-ZÄÖÜ][\wäöüß-]*er\s+)(?:Straße|Strasse|Str\.|Weg|Platz|Gasse|Allee|Ring|Damm)\s+\d{1,4}[a-z]?\b"
    r"(?:,?\s+\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+)?"
)
_FRENCH = re.compile(
    r"(?<![\w-])\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|av\.|boulevard|bd|place|chemin|allée|impasse|quai|cours)"
    r"\s+(?:(?:de la|de l'|du|des|de|d')\s*)?[A-ZÉÈ][\w'’é-]+(?:\s+[A-ZÉÈ][\w'’é-]+){0,3}"
    r"(?:,?\s+\d{5}\s+[A-ZÉÈ][\w-]+)?",
)


_GERMAN_HINTS = ("stra", "str.", "weg", "platz", "gasse", "allee", "ring", "damm", "ufer", "chaussee")
# A German match has a street word followed (after an optional capitalized word) by whitespace and the house
# number: the full expression only runs when that sequence occurs, tried where the street words occur.
_GERMAN_WORDS = ("straße", "strasse", "str.", "weg", "platz", "gasse", "allee", "ring", "damm", "ufer", "chaussee",
                 "Straße", "Strasse", "Str.", "Weg", "Platz", "Gasse", "Allee", "Ring", "Damm")  # fmt: skip
_GERMAN_NUMBER = re.compile(
    r"(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm|ufer|chaussee|Straße|Strasse|Str\.|Weg|Platz|Gasse|"
    r"Allee|Ring|Damm)(?:\s+[A-ZÄÖÜ][\wäöüß-]*)?\s+\d"
)
_FRENCH_HINTS = ("rue", "av", "bd", "boulevard", "place", "chemin", "allée", "impasse", "quai", "cours")


_HINT_WORDS = WordSet(("box", *_GERMAN_HINTS, *_FRENCH_HINTS))  # looked up in the lower-cased text
_GERMAN_WORD_SET = WordSet(_GERMAN_WORDS)  # looked up in the text


def _german_number(text: str) -> bool:
    match = _GERMAN_NUMBER.match
    return any(match(text, start) for start in occurrences(text, _GERMAN_WORD_SET(text)))


def find_addresses(text: str) -> list[Span]:
    if digit_count(text) == 0:
        return []
    lower = text.lower()
    starts = digit_run_starts(text)  # the North American / British and the French forms start with the number
    spans: list[Span] = [m.span() for m in anchored_finditer(_STREET, text, starts)]
    present = _HINT_WORDS(lower)
    if "box" in present:
        spans += [m.span() for m in _PO_BOX.finditer(text)]
    if not present.isdisjoint(_GERMAN_HINTS) and _german_number(text):
        spans += [m.span() for m in _GERMAN.finditer(text)]
    if not present.isdisjoint(_FRENCH_HINTS):
        spans += [m.span() for m in anchored_finditer(_FRENCH, text, starts)]
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
