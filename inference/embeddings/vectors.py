"""Embedding vectors on the wire: float arrays or base64 of little-endian float32 (what the openai SDK decodes),
and the deterministic unit vectors of the in-process `echo` provider."""

from __future__ import annotations

import base64
import hashlib
import math
import struct

ECHO_DIMENSIONS = 32  # the echo vectors' length when the request sets no `dimensions`


def to_base64(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def from_base64(data: str) -> list[float]:
    raw = base64.b64decode(data, validate=True)
    if len(raw) % 4:
        raise ValueError("not a whole number of float32 values")
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def encode(vector: list[float] | str, encoding_format: str) -> list[float] | str:
    """`vector` (floats, or base64 as an upstream may answer) in the client's `encoding_format`."""
    if encoding_format == "base64":
        return vector if isinstance(vector, str) else to_base64(vector)
    return from_base64(vector) if isinstance(vector, str) else vector


def echo_vector(item: str | list[int], dimensions: int) -> list[float]:
    """A unit vector determined by the input alone: the same text (or token ids) always gives the same vector,
    different inputs give different ones."""
    seed = item.encode() if isinstance(item, str) else ",".join(map(str, item)).encode()
    values: list[float] = []
    block = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(seed + block.to_bytes(4, "little")).digest()
        values.extend(value / 2147483648.0 - 1.0 for value in struct.unpack("<8I", digest))
        block += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def echo_tokens(item: str | list[int]) -> int:
    """Input tokens the echo provider counts: words of a text, ids of a token array."""
    return len(item.split()) if isinstance(item, str) else len(item)
