"""The stored trace of a generation: JSON cut to a size cap, then encrypted (docs/observability.md, "Storage").

Truncation policy, applied when the record's JSON is larger than GATEWAY_OBSERVABILITY_MAX_BODY_BYTES:
1. the longest strings of the request and answer (`instructions`, `input`, `output_text`, `output`, at any
   depth) are cut to one common size in UTF-8 bytes, chosen so that the record fits; each cut string ends
   with `…[truncated N characters]`;
2. if that is not enough (very many short strings), those four members become null;
3. if the record still does not fit (its `metadata`), `metadata` becomes null too.
A cut record carries `truncated: {"original_bytes": N, "limit_bytes": cap}`; an uncut one `truncated: null`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from cryptography.fernet import InvalidToken

from gateway_project.encryption import DecryptionFailed, fernet

IO_FIELDS = ("instructions", "input", "output_text", "output")
MARKER = "…[truncated {} characters]"
MARKER_BYTES = 40  # upper bound of the marker's JSON size for any count below 10^15
# A JSON `\u0000` escape (preceded by an even number of backslashes): dropped, as receivers such as
# PostgreSQL-backed stores refuse the character.
_NUL_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


def dumps(record: dict) -> bytes:
    data = orjson.dumps(record, default=str)
    return _NUL_ESCAPE.sub(rb"\1", data) if b"\\u0000" in data else data


def _lengths(value: Any, into: list[int]) -> None:
    """UTF-8 sizes of the strings in `value`."""
    if isinstance(value, str):
        into.append(len(value.encode()))
    elif isinstance(value, dict):
        for item in value.values():
            _lengths(item, into)
    elif isinstance(value, list):
        for item in value:
            _lengths(item, into)


def _cut(value: Any, cap: int) -> Any:
    """`value` with every string longer than `cap` UTF-8 bytes cut to at most that, and marked."""
    if isinstance(value, str):
        if len(value) * 4 <= cap:
            return value
        encoded = value.encode()
        if len(encoded) <= cap:
            return value
        kept = encoded[:cap].decode(errors="ignore")
        return kept + MARKER.format(len(value) - len(kept))
    if isinstance(value, dict):
        return {key: _cut(item, cap) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item, cap) for item in value]
    return value


def _common_length(lengths: list[int], remove: int) -> int:
    """The largest size L such that cutting every string longer than L bytes to L (plus its marker) removes at
    least `remove` bytes; 0 when even that is not enough."""
    ordered = sorted(lengths, reverse=True)
    total = 0
    for count, length in enumerate(ordered, start=1):
        total += length
        following = ordered[count] if count < len(ordered) else 0
        cap = (total - remove - count * MARKER_BYTES) // count
        if cap >= following:
            return max(cap, 0)
    return 0


def fit(record: dict, limit: int) -> tuple[bytes, bool]:
    """The record's JSON, at most `limit` bytes by the policy above, and whether it was cut."""
    data = dumps(record)
    if len(data) <= limit:
        return data, False
    marked = {**record, "truncated": {"original_bytes": len(data), "limit_bytes": limit}}
    lengths: list[int] = []
    for name in IO_FIELDS:
        _lengths(record.get(name), lengths)
    remove = len(data) - limit
    for _ in range(3):  # JSON escapes make the encoded size larger: adjust by the measured overshoot
        cap = _common_length(lengths, remove + 64)
        candidate = {**marked, **{name: _cut(record[name], cap) for name in IO_FIELDS if name in record}}
        cut = dumps(candidate)
        if len(cut) <= limit:
            return cut, True
        if cap == 0:
            break
        remove += len(cut) - limit
    candidate = {**marked, **{name: None for name in IO_FIELDS if name in record}}
    cut = dumps(candidate)
    if len(cut) > limit:
        cut = dumps({**candidate, "metadata": None})
    return cut, True


def seal(record: dict, limit: int) -> tuple[str, int, bool]:
    """(Fernet token of the record's JSON cut to `limit`, its size in bytes before encryption, whether cut)."""
    record.setdefault("truncated", None)
    data, truncated = fit(record, limit)
    return fernet().encrypt(data).decode("ascii"), len(data), truncated


def unseal(token: str) -> dict:
    """The record stored by `seal` (DecryptionFailed when no configured key opens it)."""
    try:
        return orjson.loads(fernet().decrypt(token.encode("ascii")))
    except InvalidToken as exc:
        raise DecryptionFailed("stored trace cannot be decrypted with the configured keys") from exc
