"""What a cache entry holds, and the request key it is stored under.

An entry is the canonical answer (Responses output items, usage, status, finish reason) and the endpoint that
produced it, as JSON. It is replayed through the ingress of the request that hits it, so one entry serves
/responses, /chat/completions and /messages, JSON and streamed alike (docs/cache.md).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from inference.pipeline.context import Outcome, Usage
from inference.providers.base import CanonicalResult

VERSION = 1
# Request members that do not change the answer: the key leaves them out. `stream` and `stream_options` only
# change how the answer is written (an entry is replayed as JSON or as a stream); the others are accounting,
# tracing and abuse-tracking identifiers (`safety_identifier` / `user` are only hashed for the provider).
NON_SEMANTIC = frozenset({"stream", "stream_options", "metadata", "user", "session_id", "trace", "safety_identifier"})
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
)


def request_key(body: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical request without its non-semantic members, object keys sorted."""
    semantic = {k: v for k, v in body.items() if k not in NON_SEMANTIC}
    return hashlib.sha256(orjson.dumps(semantic, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(slots=True)
class Entry:
    """A cached answer as read back from a store."""

    endpoint_id: str  # the catalog Endpoint's uuid, as text
    model: str
    created: float  # epoch seconds
    expires: float
    result: dict[str, Any]

    def canonical(self) -> CanonicalResult:
        """A fresh CanonicalResult to replay (writers may change its usage), priced at zero."""
        data = self.result
        usage = Usage(**{name: int(data["usage"].get(name, 0)) for name in USAGE_FIELDS})
        usage.cost = Decimal(0)
        usage.estimated = bool(data["usage"].get("estimated"))
        return CanonicalResult(
            upstream_id=data.get("upstream_id", ""),
            output=data["output"],
            usage=usage,
            status=data.get("status", "completed"),
            incomplete_reason=data.get("incomplete_reason"),
            finish_reason=data.get("finish_reason", "stop"),
        )


def encode(outcome: Outcome, result: CanonicalResult, ttl: int) -> tuple[bytes, str, float]:
    """(JSON bytes, model slug, expiry) of the answer just served; the usage is the settled one of the outcome."""
    candidate = outcome.candidate
    assert candidate is not None
    now = time.time()
    usage = outcome.usage
    data = {
        "v": VERSION,
        "endpoint_id": str(candidate.endpoint_id),
        "model": candidate.model_slug,
        "created": now,
        "expires": now + ttl,
        "result": {
            "upstream_id": result.upstream_id,
            "output": result.output,
            "usage": {**{name: getattr(usage, name) for name in USAGE_FIELDS}, "estimated": usage.estimated},
            "status": result.status,
            "incomplete_reason": result.incomplete_reason,
            "finish_reason": result.finish_reason,
        },
    }
    return orjson.dumps(data), candidate.model_slug, now + ttl


def decode(raw: bytes | str) -> Entry | None:
    """The entry of stored JSON; None when it is not one this version can replay."""
    try:
        data = orjson.loads(raw)
        if data.get("v") != VERSION:
            return None
        return Entry(
            endpoint_id=str(data["endpoint_id"]),
            model=data["model"],
            created=float(data["created"]),
            expires=float(data["expires"]),
            result=data["result"],
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


def fresh(entry: Entry, max_age: int, now: float | None = None) -> bool:
    """Not expired, and not older than the request accepts (its TTL)."""
    now = time.time() if now is None else now
    return entry.expires > now and now - entry.created < max_age
