"""The ASGI entry of POST /api/v1/embeddings: the /responses consumer (body limit, disconnect cancellation,
error envelope, 503 on an unreachable database) with the embeddings body validator and its own innermost
handler inside the same `GATEWAY_INFERENCE_MIDDLEWARE` chain."""

from __future__ import annotations

from typing import Any

from inference.consumers import ResponsesConsumer
from inference.embeddings.schema import parse_embeddings_body


class EmbeddingsConsumer(ResponsesConsumer):
    ingress_format = "embeddings"

    def innermost(self):
        from inference.embeddings.handler import handle_embeddings

        return handle_embeddings

    def parse(self, raw: bytes) -> dict[str, Any]:
        return parse_embeddings_body(raw)


embeddings_consumer = EmbeddingsConsumer()
