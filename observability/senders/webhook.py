"""`webhook`: the trace as JSON, with an HMAC-SHA256 signature header when `secret` is configured.

Signature: `X-Gateway-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed by secret>`.
`X-Gateway-Delivery` carries the outbox row id (stable across retries, for de-duplication).
"""

from __future__ import annotations

import hashlib
import hmac
import time

from observability.senders.base import OutgoingRequest, json_request

SIGNATURE_HEADER = "X-Gateway-Signature"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, tolerance_seconds: int = 300, now: float | None = None) -> bool:
    """What a receiver does: recompute the HMAC and compare in constant time, rejecting stale timestamps."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
    except (ValueError, KeyError):
        return False
    if abs((now or time.time()) - timestamp) > tolerance_seconds:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), header)


def build(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    payload = {"type": "generation", "delivery_id": delivery_id, "trace": trace}
    request = json_request(
        config["url"],
        payload,
        {"X-Gateway-Delivery": delivery_id, "X-Gateway-Event": "generation"},
        method=config.get("method") or "POST",
    )
    if config.get("secret"):
        request.headers[SIGNATURE_HEADER] = sign(config["secret"], int(time.time()), request.body)
    return request
