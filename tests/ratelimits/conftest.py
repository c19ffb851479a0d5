"""Fixtures of the rate-limit tests: the data-plane fixtures (echo catalog, SDK, raw client)."""

from tests.inference.conftest import echo_catalog, http, sdk  # noqa: F401  (fixtures)
