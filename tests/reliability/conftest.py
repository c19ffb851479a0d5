"""The data-plane fixtures of tests/inference (catalog, raw HTTP client, fake upstream with a platform key,
accounting writer shutdown)."""

from tests.inference.conftest import _close_accounting_writer, echo_catalog, http  # noqa: F401  (fixtures)
from tests.inference.test_fallback import upstream  # noqa: F401  (fixture)
