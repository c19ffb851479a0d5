"""Fixtures of the server-tool tests: the data-plane fixtures of tests/inference plus the loopback fakes."""

from __future__ import annotations

from tests.inference.conftest import echo_catalog, http, sdk  # noqa: F401  (fixtures)
