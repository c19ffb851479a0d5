"""ASGI HTTP routes of the data plane, matched before Django (see gateway_project/asgi.py)."""

from django.urls import re_path

from inference.consumers import chat_consumer, messages_consumer, responses_consumer
from inference.embeddings.consumer import embeddings_consumer
from inference.responses_ws import responses_websocket
from inference.token_count import count_tokens_consumer, input_tokens_consumer

http_routes: list = [
    re_path(r"^api/v1/responses/?$", responses_consumer),
    re_path(r"^api/v1/responses/input_tokens/?$", input_tokens_consumer),
    re_path(r"^api/v1/chat/completions/?$", chat_consumer),
    re_path(r"^api/v1/messages/?$", messages_consumer),
    re_path(r"^api/v1/messages/count_tokens/?$", count_tokens_consumer),
    re_path(r"^api/v1/embeddings/?$", embeddings_consumer),
]

# The Responses API over a WebSocket (GET /api/v1/responses with Upgrade: websocket): inference/responses_ws.py.
websocket_routes: list = [re_path(r"^api/v1/responses/?$", responses_websocket)]
