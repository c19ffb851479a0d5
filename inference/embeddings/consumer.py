"""The ASGI entry of POST /api/v1/embeddings: an `InferenceConsumer` (body limit, disconnect cancellation,
CORS, the error envelope, 503 on an unreachable database) whose ingress validates the embeddings body and
whose chain is the same `GATEWAY_INFERENCE_MIDDLEWARE` list around the embeddings innermost handler."""

from __future__ import annotations

from typing import Any

from inference.consumers import InferenceConsumer
from inference.embeddings.schema import parse_embeddings_body
from inference.ingress import Ingress
from inference.pipeline.runner import build_chain


class EmbeddingsIngress(Ingress):
    """Errors in the OpenAI envelope, as for /responses; the answer is written by the embeddings handler."""

    name = "embeddings"

    def parse(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        return parse_embeddings_body(raw)


class EmbeddingsConsumer(InferenceConsumer):
    _embeddings_chain = None

    @property
    def chain(self):
        if EmbeddingsConsumer._embeddings_chain is None:
            from inference.embeddings.handler import handle_embeddings

            EmbeddingsConsumer._embeddings_chain = build_chain(handle_embeddings)
        return EmbeddingsConsumer._embeddings_chain


EMBEDDINGS = EmbeddingsIngress()
embeddings_consumer = EmbeddingsConsumer(EMBEDDINGS)
