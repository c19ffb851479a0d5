"""Pattern detectors with validation: e-mail addresses, US SSNs, payment cards (Luhn), IPv4 and IPv6."""

from __future__ import annotations

import ipaddress
import re

from textscan.detectors.textindex import anchored_finditer, digit_count, digit_run_starts

Span = tuple[int, int]

__all__ = ["digit_count", "find_credit_cards", "find_emails", "find_ip_addresses", "find_ssns", "luhn_valid"]


_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)


_DOMAIN_RUN = re.compile(r"[A-Za-z0-9.-]*")
_LOCAL_MAX = 64  # the local part before the '@' is 1 to 64 characters long
_SHORT = 128  # up to this length one pass of the expression costs less than the windows


def find_emails(text: str) -> list[Span]:
    """What `_EMAIL.finditer(text)` finds. In a longer text, searched only around each '@': a match holds exactly
    one '@', starts at most 64 characters before it and ends within the run of domain characters after it, so
    the search runs from there with `endpos` one character past that run (the look-ahead still sees the
    character it reads)."""
    if "@" not in text:
        return []
    if len(text) <= _SHORT:
        return [m.span() for m in _EMAIL.finditer(text) if ".." not in m.group()]
    spans = []
    cursor = 0
    at = text.find("@")
    search = _EMAIL.search
    while at >= 0:
        end = _DOMAIN_RUN.match(text, at + 1).end()
        m = search(text, max(cursor, at - _LOCAL_MAX), end + 1)
        if m is not None:
            if ".." not in m.group():
                spans.append(m.span())
            cursor = m.end()
        at = text.find("@", max(at + 1, cursor))
    return spans


# Area 000, 666 and 900-999, group 00 and serial 0000 are never issued.
_SSN_FORMATTED = re.compile(r"(?<![\d-])(?!000|666|9\d\d)(\d{3})([- ])(?!00)\d{2}\2(?!0000)\d{4}(?![\d-])")
_SSN_PLAIN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}(?!00)\d{2}(?!0000)\d{4}(?!\d)")
_SSN_CONTEXT = re.compile(r"\b(?:ssn|social security(?: number| no\.?| #)?|ss#)\W{0,5}$", re.IGNORECASE)


def find_ssns(text: str) -> list[Span]:
    """Dashed or spaced SSNs anywhere; nine plain digits only right after an SSN cue word."""
    if digit_count(text) < 9:
        return []
    starts = digit_run_starts(text)  # both expressions start a digit run
    spans = [m.span() for m in anchored_finditer(_SSN_FORMATTED, text, starts)]
    for m in anchored_finditer(_SSN_PLAIN, text, starts):
        if _SSN_CONTEXT.search(text[max(0, m.start() - 40) : m.start()]):
            spans.append(m.span())
    return sorted(spans)


_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_CARD_PREFIXES = (
    ("4", 13, 19),  # Visa
    ("34", 15, 15),  # American Express
    ("37", 15, 15),
    ("36", 14, 19),  # Diners Club
    ("38", 14, 19),
    ("300", 14, 19),
    ("301", 14, 19),
    ("302", 14, 19),
    ("303", 14, 19),
    ("304", 14, 19),
    ("305", 14, 19),
    ("6011", 16, 19),  # Discover
    ("65", 16, 19),
    ("62", 16, 19),  # UnionPay
    ("35", 16, 19),  # JCB
)


def luhn_valid(number: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = ord(char) - 48
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _known_brand(number: str) -> bool:
    length = len(number)
    if length == 16 and (51 <= int(number[:2]) <= 55 or 2221 <= int(number[:4]) <= 2720):  # Mastercard
        return True
    if 16 <= length <= 19 and 644 <= int(number[:3]) <= 649:  # Discover
        return True
    return any(number.startswith(p) and lo <= length <= hi for p, lo, hi in _CARD_PREFIXES)


def _consistent_grouping(raw: str) -> bool:
    """Separators, if any, are all the same and split the number in groups of 4 (or 4-6-5 for Amex)."""
    seps = {c for c in raw if c in " -"}
    if not seps:
        return True
    if len(seps) > 1:
        return False
    groups = [len(g) for g in raw.split(seps.pop())]
    return groups in ([4, 6, 5], [4, 6, 4]) or (all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4)


def find_credit_cards(text: str) -> list[Span]:
    """Payment card numbers of a known brand and length that pass the Luhn check."""
    if digit_count(text) < 13:
        return []
    spans = []
    for m in anchored_finditer(_CARD, text, digit_run_starts(text)):  # a card number starts a digit run
        raw = m.group()
        number = raw.replace(" ", "").replace("-", "")
        if _known_brand(number) and _consistent_grouping(raw) and luhn_valid(number):
            spans.append(m.span())
    return spans


_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_VERSION_CUE = re.compile(
    r"(?:\bversion|\bver\.?|\bv|\brelease|\bbuild|\bsection|\bchapter|\bclause|§|\bstep|\brule|\bitem|\bfigure)\s*$",
    re.IGNORECASE,
)
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3})(?![\w:])")


def find_ip_addresses(text: str) -> list[Span]:
    """IPv4 dotted quads with octets 0-255 (no leading zeros) and IPv6 addresses that parse."""
    spans = []
    if "." in text and digit_count(text) >= 4:
        for m in anchored_finditer(_IPV4, text, digit_run_starts(text)):  # starts a digit run
            if _VERSION_CUE.search(text[max(0, m.start() - 12) : m.start()]):
                continue
            if all(len(o) == 1 or o[0] != "0" for o in m.group().split(".")):
                try:
                    ipaddress.IPv4Address(m.group())
                except ValueError:
                    continue
                spans.append(m.span())
    if text.count(":") >= 2:
        for m in _IPV6.finditer(text):
            candidate = m.group()
            if not any(c.isalnum() for c in candidate):
                continue
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            spans.append(m.span())
    return sorted(spans)
