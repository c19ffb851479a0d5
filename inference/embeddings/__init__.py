"""POST /api/v1/embeddings: the OpenAI Embeddings API through the same middleware chain as /responses.

`schema` validates the wire body (the canonical embeddings request is that body), `adapters` call the
upstreams (OpenAI-compatible `/embeddings`, the in-process `echo` vectors), `handler` is the innermost handler
of the chain (routing with fallback, the JSON answer), `vectors` holds the float32/base64 encoding.
"""
