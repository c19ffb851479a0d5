"""Regular expressions written by administrators (guardrail content filters, observability `filter_rules`)
are compiled with RE2 (google-re2): matching time is linear in the text, so a pattern cannot stall a process
(no catastrophic backtracking: Python's `re` took 6.4 s on `^(a+)+$` against 28 characters, holding the GIL
for every tenant). RE2 has no look-around or back-references; such a pattern is rejected at write time with
a 400.
"""

from __future__ import annotations

from functools import lru_cache

import re2

MAX_PATTERN_LENGTH = 1000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class InvalidPattern(ValueError):
    """The pattern is not a valid RE2 regular expression."""


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str):
    """The compiled RE2 pattern, or InvalidPattern with the reason."""
    if not pattern:
        raise InvalidPattern("must not be empty")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPattern(f"must be at most {MAX_PATTERN_LENGTH} characters")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidPattern(f"invalid regular expression ({reason})") from None


def compile_screen(patterns: list[str]):
    """An RE2 Set of `patterns` (already validated): `.Match(text)` lists the indexes of those that match, in
    one pass over the text, so the individual patterns only run on texts where they match."""
    screen = re2.Set.SearchSet(_OPTIONS)
    for pattern in patterns:
        screen.Add(pattern)
    screen.Compile()
    return screen
