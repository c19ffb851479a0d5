"""Embedding adapters: pure `build_request` / `parse_response` plus the shared send (inference.providers.http).

- `OpenAIEmbeddings`: `POST {base_url}/embeddings` of every OpenAI-compatible provider (catalog formats
  `openai-responses` and `openai-chat`: OpenAI, Groq, Together, DeepInfra, vLLM...).
- `EchoEmbeddings`: the in-process `echo` provider, deterministic unit vectors offline.

A provider format with no embeddings API (`anthropic-messages`) has no adapter: the catalog loader refuses an
embeddings model on it, and routing skips such an endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inference.embeddings import vectors
from inference.pipeline.context import Credential, Usage
from inference.providers.base import ProviderError, ProviderErrorKind, Timeouts, UpstreamRequest
from inference.providers.errors import malformed
from inference.providers.http import post_json


@dataclass(slots=True)
class EmbeddingCall:
    """One attempt: the inputs (strings or token-id lists), what to ask for, where, with which credential."""

    inputs: list[str | list[int]]
    raw_input: Any  # the request's `input` as the client sent it (forwarded as it is)
    upstream_model: str
    base_url: str
    credential: Credential
    encoding_format: str = "float"
    dimensions: int | None = None
    user: str | None = None  # already hashed
    timeouts: Timeouts = field(default_factory=Timeouts)


@dataclass(slots=True)
class EmbeddingResult:
    vectors: list[list[float] | str]  # in input order; a string is base64 float32
    usage: Usage
    upstream_model: str = ""


class OpenAIEmbeddings:
    api_formats = ("openai-responses", "openai-chat")

    def build_request(self, call: EmbeddingCall) -> UpstreamRequest:
        headers = {"Content-Type": "application/json"}
        if call.credential.api_key:
            headers["Authorization"] = f"Bearer {call.credential.api_key}"
        body: dict[str, Any] = {
            "model": call.upstream_model,
            "input": call.raw_input,
            "encoding_format": call.encoding_format,
        }
        if call.dimensions is not None:
            body["dimensions"] = call.dimensions
        if call.user:
            body["user"] = call.user
        return UpstreamRequest(url=call.base_url.rstrip("/") + "/embeddings", headers=headers, json=body)

    def parse_response(self, data: Any, expected: int) -> EmbeddingResult:
        """The vectors in input order and the usage; a missing or partial answer is a malformed body."""
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != expected:
            raise malformed("embeddings body (data)", raw=data if isinstance(data, dict) else None)
        ordered: list[Any] = [None] * expected
        for position, item in enumerate(items):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < expected or not isinstance(vector, (list, str)):
                raise malformed("embeddings body (data[].embedding)")
            ordered[index] = vector
        if any(v is None for v in ordered):
            raise malformed("embeddings body (missing index)")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt = usage.get("prompt_tokens")
        return EmbeddingResult(
            vectors=ordered,
            usage=Usage(input_tokens=prompt if isinstance(prompt, int) and prompt >= 0 else 0),
            upstream_model=str(data.get("model") or ""),
        )

    async def embed(self, call: EmbeddingCall) -> EmbeddingResult:
        data = await post_json(self.build_request(call), call.timeouts, call.credential.api_key)
        try:
            return self.parse_response(data, len(call.inputs))
        except ProviderError as error:
            error.raw = None  # never echo an upstream body that might quote the credential
            raise


class EchoEmbeddings:
    api_formats = ("echo",)

    async def embed(self, call: EmbeddingCall) -> EmbeddingResult:
        dimensions = call.dimensions or vectors.ECHO_DIMENSIONS
        found = [vectors.echo_vector(item, dimensions) for item in call.inputs]
        if call.encoding_format == "base64":
            found = [vectors.to_base64(v) for v in found]
        tokens = sum(vectors.echo_tokens(item) for item in call.inputs)
        return EmbeddingResult(vectors=found, usage=Usage(input_tokens=tokens), upstream_model=call.upstream_model)


_ADAPTERS: dict[str, Any] = {}
for _adapter in (OpenAIEmbeddings(), EchoEmbeddings()):
    for _format in _adapter.api_formats:
        _ADAPTERS[_format] = _adapter


def embeddings_adapter(api_format: str):
    """The embeddings adapter of a catalog `api_format`, or None when that format has no embeddings API."""
    return _ADAPTERS.get(api_format)


def unsupported(api_format: str) -> ProviderError:
    return ProviderError(ProviderErrorKind.BAD_REQUEST, f"provider format {api_format} has no embeddings API")
