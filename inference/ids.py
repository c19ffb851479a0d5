"""Request and item ids: random 128-bit values from the operating system's CSPRNG, fork-safe.

`os.urandom` per id costs a system call (and a GIL release) each time; ids are drawn instead from a
buffer of `os.urandom` bytes refilled every `POOL_IDS` ids. The buffer is discarded in a forked child
(`os.register_at_fork`), so a parent and a child never hand out the same ids, and the values are
unpredictable (a seeded `random.Random`, used before, repeated across a fork and could be reconstructed
from 624 observed ids).
"""

from __future__ import annotations

import os
import threading
import uuid

POOL_IDS = 256
_ID_BYTES = 16


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self._buffer = b""
        self._offset = 0
        self._lock = threading.Lock()  # a lock held by another thread at fork time stays held in the child

    def take(self) -> bytes:
        with self._lock:
            offset = self._offset
            if offset >= len(self._buffer):
                self._buffer = os.urandom(_ID_BYTES * POOL_IDS)
                offset = 0
            self._offset = offset + _ID_BYTES
            return self._buffer[offset : offset + _ID_BYTES]


_pool = _Pool()
os.register_at_fork(after_in_child=_pool.reset)


def new_uuid() -> uuid.UUID:
    """A random version-4 UUID."""
    return uuid.UUID(bytes=_pool.take(), version=4)


def new_item_id(prefix: str) -> str:
    """`<prefix>_<32 hex digits>`, random."""
    return f"{prefix}_{_pool.take().hex()}"
