"""api_format → adapter instance. Adapters are stateless; one instance of each serves every request."""

from __future__ import annotations

from inference.providers.base import Adapter
from inference.providers.echo import EchoAdapter

_ADAPTERS: dict[str, Adapter] = {
    EchoAdapter.api_format: EchoAdapter(),
}


def get_adapter(api_format: str) -> Adapter:
    """The adapter of a catalog `api_format`; KeyError for an unknown format."""
    return _ADAPTERS[api_format]


def register_adapter(adapter: Adapter) -> None:
    _ADAPTERS[adapter.api_format] = adapter
