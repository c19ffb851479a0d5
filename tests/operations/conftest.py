"""Data-plane fixtures shared with tests/inference (echo catalog)."""

from tests.inference.conftest import _close_accounting_writer, echo_catalog  # noqa: F401  (fixtures)
