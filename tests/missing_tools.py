"""Tests that need a tool this machine may lack (a browser, an agent CLI, a load balancer): skipped with a
reason saying how to install it, or failed when the variable .ci/run sets says the tool must be there. The
end of every `make test` lists what was skipped this way (tests/conftest.py), so a skip is never silent."""

from __future__ import annotations

import os

import pytest

# The words every such skip reason starts with; the summary at the end of the run looks for them.
MISSING = "missing tool:"


def skip_or_fail(what: str, how_to_install: str, require_variable: str) -> None:
    """Skip the test for `what` being absent, or fail it when `require_variable` is set (CI installs it)."""
    if os.environ.get(require_variable):
        pytest.fail(f"{what} is not installed and {require_variable} is set")
    pytest.skip(f"{MISSING} {what}: not installed ({how_to_install}; CI sets {require_variable} and installs it)")
