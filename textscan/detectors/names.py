"""Person names, by a tested heuristic (no model, no download).

A name is found when one of these holds:
- an honorific (Mr, Mrs, Ms, Dr, Prof, Sir, Herr, Frau, Mme...) precedes one to three capitalized words;
- a cue ("my name is", "I am", "this is", "call me", "signed", "regards,", "name:") precedes a capitalized
  given name, optionally with a surname;
- a known given name (the 1990 US Census given-name list, about 5,100 names, in first_names.txt) is followed
  by an optional middle name or initial and a capitalized surname-shaped word that is not a common word,
  place or organisation word.
Ambiguous given names that are also common words (Will, May, Mark, Grant...) need the surname too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from textscan.detectors.textindex import SHORT_TEXT, WordSet, anchored_finditer, folded, occurrences

Span = tuple[int, int]

_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
_WORD = rf"[{_UPPER}][{_LOWER}]+(?:[-'][{_UPPER}]?[{_LOWER}]+)?"
_SURNAME = rf"(?:(?:Mc|Mac|O')?{_WORD})"
_PARTICLE = r"(?:van der|van den|van|von|de la|de|da|del|der|di|du|le|la|bin|al-|ibn)"
_HONORIFIC = re.compile(
    rf"\b(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof|Professor|Sir|Dame|Madam|Madame|Mme|Mlle|Herr|Frau|Sr|Sra|Rev|Fr)\.?\s+"
    rf"((?:{_WORD}\s+)?(?:{_PARTICLE}\s+)?{_SURNAME})\b"
)
_CUE = re.compile(
    rf"(?:\bmy name is|\bmy name's|\bi am|\bi'm|\bthis is|\bcall me|\bsigned,?|\bregards,|\bsincerely,|\bcheers,|"
    rf"\bname\s*:|\bpatient\s*:|\bcustomer\s*:|\bcontact\s*:)\s+({_WORD}(?:\s+(?:{_PARTICLE}\s+)?{_SURNAME})?)\b",
    re.IGNORECASE,
)
_FULL = re.compile(rf"\b({_WORD})\s+(?:([A-Z]\.|{_WORD})\s+)?(?:{_PARTICLE}\s+)?({_SURNAME})\b")
_CAPITALIZED = re.compile(rf"\b{_WORD}\b")
# The same without the leading \b: it starts with a character class, which `re` scans for in C, about 3x faster.
_CAPITALIZED_TAIL = re.compile(rf"{_WORD}\b")
_WORD_CHAR = re.compile(r"\w")
# Cheap substring pre-checks: the honorific and cue expressions only run when one of these occurs.
_HONORIFIC_HINTS = ("Mr", "Ms", "Mx", "Miss", "Dr", "Prof", "Sir", "Dame", "Mad", "Mme", "Mlle", "Herr", "Frau", "Sr",
                    "Rev", "Fr")  # fmt: skip
_CUE_HINTS = ("name", "i am", "i'm", "this is", "call me", "signed", "regards", "sincerely", "cheers", "patient",
              "customer", "contact")  # fmt: skip
# How each alternative of _CUE begins (lower case): a cue match starts where one of these occurs in folded(text).
_CUE_STARTS = ("my name", "i am", "i'm", "this is", "call me", "signed", "regards,", "sincerely,", "cheers,", "name",
               "patient", "customer", "contact")  # fmt: skip
_HONORIFIC_WORDS = WordSet(_HONORIFIC_HINTS)  # looked up in the text
_CUE_WORDS = WordSet((*_CUE_HINTS, *_CUE_STARTS))  # looked up in the lower-cased text

_COMMON = frozenset(
    """
    The This That These Those There Then They Their Them What When Where Which Who Why How And But For Not You
    Your Our All Any Each Every Some Many Most Other Such Only Also Just Very Here Please Thanks Thank Dear Hello
    Hi Yes No New Old Great Good Best Big Little Last First Next Day Days Week Month Year Today Tomorrow Monday
    Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August September
    October November December Street Avenue Road Lane Drive Boulevard Court Way Place Park Square Hall House
    Center Centre Hospital School College University Institute Church Airport Station Island Beach Bay Hill
    Valley River Lake Mountain Mount City County State States Kingdom Republic Bank Company Corp Corporation Inc
    Ltd Group Foundation Association Society Team Club Press News Times Post Journal Report Project Program
    Service Services System Systems Power Access Sale Sales Price Prices Christmas Eve Easter North South East
    West Tech Technology Technologies Motors Airlines Labs Studio Studios Store Market Cafe Restaurant Hotel Inn
    Museum Library Gallery Theatre Theater Stadium Arena Bridge Tower Building Plaza Mall Road Avenue Texas
    California Florida York Jersey Carolina Dakota Hampshire Mexico Angeles Francisco Diego Vegas
    Street Grand Royal General Central National International Global United American
    English French German Spanish Chinese Japanese Indian British European Python Java Script Code Data Cloud
    Docker Linux Windows Apple Google Amazon Microsoft Meta Server Client Error Warning Note Summary Title
    Chapter Section Table Figure Version Release Update Edition Series Season Episode Part Book Film Movie Song
    Album Award Prize Cup League Championship Games Olympics War Act Law Bill Street Gate Garden Gardens Farm
    """.split()  # noqa: SIM905
)
_AMBIGUOUS = frozenset(
    """
    Will May June April August Mark Rose Grant Bill Art Long Young Page Hope Joy Faith Dawn Summer Autumn Destiny
    Honey Royal Major Sterling Price Chance Christian Ray Guy Frank Sunny Star Crystal Ruby Pearl Jewel Amber
    Golden Sandy Glen Dale Forest Rich Buck Chase Hunter Miles Wade Carol Virginia Georgia Jordan Florence Sydney
    Austin Dallas Houston Charlotte Orlando Chelsea Madison Victoria Washington Paris Brooklyn Phoenix Lincoln
    Jackson Tyler Cameron Taylor Morgan Parker Carter Mason Logan Max Don Sue Pat Lou Ali Else Iris Ivy Holly
    Lily Daisy Violet Hazel Olive Ginger Candy Misty Storm Rain River Stone Clay Cliff Rocky Reed Bud Bob Jean
    """.split()  # noqa: SIM905
)


@lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    path = Path(__file__).with_name("first_names.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _surname_ok(word: str) -> bool:
    return word not in _COMMON and len(word) >= 2


def find_person_names(text: str) -> list[Span]:
    if not text or text.islower():
        return []
    spans: list[Span] = []
    short = len(text) < SHORT_TEXT  # a few `in` scans cost less than a WordSet pass
    # An honorific match starts where one of the hints (each alternative's first letters) occurs in the text.
    if short:
        honorifics = _HONORIFIC_HINTS if any(hint in text for hint in _HONORIFIC_HINTS) else ()
    else:
        honorifics = _HONORIFIC_WORDS(text)
    if honorifics:
        matches = anchored_finditer(_HONORIFIC, text, occurrences(text, honorifics))
        spans += [m.span(1) for m in matches if _surname_ok(m.group(1).split()[-1])]
    lower = text.lower()
    if short:
        cue, cue_starts = any(hint in lower for hint in _CUE_HINTS), _CUE_STARTS
    else:
        present = _CUE_WORDS(lower)
        cue, cue_starts = not present.isdisjoint(_CUE_HINTS), present.intersection(_CUE_STARTS)
    if cue:
        # folded(text) is `lower` for an ASCII text (and the starts were looked up in `lower`)
        starts = occurrences(lower, cue_starts) if text.isascii() else occurrences(folded(text), _CUE_STARTS)
        for m in anchored_finditer(_CUE, text, starts):
            first = m.group(1).split()[0]
            if first[0].isupper() and first in given_names() and first not in _COMMON:
                spans.append(m.span(1))
    spans.extend(_full_names(text))
    return _merge(spans)


def _capitalized_words(text: str) -> list[re.Match]:
    """`list(_CAPITALIZED.finditer(text))`. When every match of _CAPITALIZED_TAIL starts at a word boundary the
    two lists are the same (at each step the leftmost tail match is also the leftmost full match); otherwise
    (a capital inside a word: "McDonald", "iPhone") the full expression runs."""
    matches = list(_CAPITALIZED_TAIL.finditer(text))
    is_word = _WORD_CHAR.match
    if any(m.start() and is_word(text, m.start() - 1) for m in matches):
        return list(_CAPITALIZED.finditer(text))
    return matches


def _full_names(text: str) -> list[Span]:
    """Given name + optional middle + surname; on a miss the search resumes at the next word."""
    names = given_names()
    spans: list[Span] = []
    end = 0
    for word in _capitalized_words(text):
        first = word.group()
        if word.start() < end or first not in names or first in _COMMON:
            continue
        m = _FULL.match(text, word.start())
        if m is None:
            continue
        middle, last = m.group(2), m.group(3)
        if not _surname_ok(last) or (middle and not middle.endswith(".") and middle in _COMMON):
            continue
        if first in _AMBIGUOUS and last in names and last in _AMBIGUOUS:
            continue
        spans.append(m.span())
        end = m.end()
    return spans


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
