"""api_format → adapter instance. Adapters are stateless; one instance of each serves every request."""

from __future__ import annotations

from inference.providers.anthropic import AnthropicMessagesAdapter
from inference.providers.base import Adapter
from inference.providers.echo import EchoAdapter
from inference.providers.openai_chat import OpenAIChatAdapter
from inference.providers.openai_responses import OpenAIResponsesAdapter

_ADAPTERS: dict[str, Adapter] = {
    adapter.api_format: adapter
    for adapter in (EchoAdapter(), OpenAIResponsesAdapter(), OpenAIChatAdapter(), AnthropicMessagesAdapter())
}


def get_adapter(api_format: str) -> Adapter:
    """The adapter of a catalog `api_format`; KeyError for an unknown format."""
    return _ADAPTERS[api_format]


def register_adapter(adapter: Adapter) -> None:
    _ADAPTERS[adapter.api_format] = adapter
