"""The detectors and the scan as they were before the request-path speed-up (commit ac653c3), kept verbatim
(only their imports point here) so tests/guardrails/test_differential.py can compare the current implementation
with them on a corpus: the findings and redactions must stay identical."""

from __future__ import annotations

from tests.guardrails.legacy.address import find_addresses
from tests.guardrails.legacy.injection import find_prompt_injections
from tests.guardrails.legacy.names import find_person_names
from tests.guardrails.legacy.patterns import find_credit_cards, find_emails, find_ip_addresses, find_ssns
from tests.guardrails.legacy.phone import find_phone_numbers

DETECTORS = {
    "email": find_emails,
    "phone": find_phone_numbers,
    "ssn": find_ssns,
    "credit-card": find_credit_cards,
    "ip-address": find_ip_addresses,
    "person-name": find_person_names,
    "address": find_addresses,
    "regex-prompt-injection": find_prompt_injections,
}
