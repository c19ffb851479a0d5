"""Built-in content detectors. Each takes a text and returns the (start, end) spans of what it found.

Slugs (DECISIONS.md §3): email, phone, ssn, credit-card, ip-address, person-name, address,
regex-prompt-injection. Every detector starts with a cheap pre-check so a typical prompt costs microseconds.
"""

from __future__ import annotations

from collections.abc import Callable

from textscan.detectors.address import find_addresses
from textscan.detectors.injection import find_prompt_injections
from textscan.detectors.names import find_person_names
from textscan.detectors.patterns import find_credit_cards, find_emails, find_ip_addresses, find_ssns
from textscan.detectors.phone import find_phone_numbers

Span = tuple[int, int]

DETECTORS: dict[str, Callable[[str], list[Span]]] = {
    "email": find_emails,
    "phone": find_phone_numbers,
    "ssn": find_ssns,
    "credit-card": find_credit_cards,
    "ip-address": find_ip_addresses,
    "person-name": find_person_names,
    "address": find_addresses,
    "regex-prompt-injection": find_prompt_injections,
}

LABELS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "ssn": "[SSN]",
    "credit-card": "[CREDIT_CARD]",
    "ip-address": "[IP_ADDRESS]",
    "person-name": "[PERSON_NAME]",
    "address": "[ADDRESS]",
    "regex-prompt-injection": "[PROMPT_INJECTION]",
}

BUILTIN_SLUGS: tuple[str, ...] = tuple(DETECTORS)


def detect(slug: str, text: str) -> list[Span]:
    """Spans of `text` that the built-in detector `slug` finds."""
    return DETECTORS[slug](text)
