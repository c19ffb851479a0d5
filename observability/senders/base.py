"""The shared shape of a sender's output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

USER_AGENT = "model-gateway-observability/1.0"


class DeliveryNotSupported(Exception):
    """The destination's type has no sender: its rows go straight to the dead state with this message."""


@dataclass
class OutgoingRequest:
    method: str
    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def json_request(url: str, payload, headers: dict[str, str] | None = None, method: str = "POST") -> OutgoingRequest:
    body = json.dumps(payload, separators=(",", ":"), default=str).encode()
    return OutgoingRequest(
        method=method,
        url=url,
        body=body,
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **(headers or {})},
    )


def join_url(base: str, suffix: str) -> str:
    """`base` with `suffix` appended to its path, unless the path already ends with it."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith(suffix.rstrip("/")):
        path = path + suffix
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
