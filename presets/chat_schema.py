"""Validation of the Chat Completions body of POST /presets/{slug}/chat/completions, with the chat ingress's
own rules (inference.ingress.chat_request): one rule set for the endpoint and for the presets made from it.
`messages` is optional here (only its system and developer messages are kept, as the system prompt)."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.ingress.chat_request import to_canonical
from inference.members import CHAT as CHAT_MEMBERS
from presets.config import PLACEHOLDER_MESSAGES


def validate_chat_body(body: Any) -> dict[str, Any]:
    """Check every member of a Chat Completions body; returns it unchanged, or raises a 400 naming the member."""
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    for name in body:  # a management body stays strict (the data plane forwards these to a same-format upstream)
        if name not in CHAT_MEMBERS:
            raise validation_error(name, "unknown parameter")
    to_canonical({**body, "messages": body.get("messages") or PLACEHOLDER_MESSAGES})
    return body
