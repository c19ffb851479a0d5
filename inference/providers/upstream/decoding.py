"""Content decoding of an answer's body as it arrives: gzip (one member or several) and deflate (zlib-wrapped or
raw), bounded per call."""

from __future__ import annotations

import zlib


class Decoder:
    """Decompresses a gzip (one member or several) or deflate (zlib-wrapped or raw) body as it arrives, at most
    `room` bytes a call; `finished()` says whether the compressed data reached its end."""

    __slots__ = ("fed", "gzip", "seen", "zlib")

    def __init__(self, encoding: str) -> None:
        self.gzip = encoding == "gzip"
        self.zlib = zlib.decompressobj(31 if self.gzip else 15)
        self.seen: list[bytes] | None = None if self.gzip else []  # deflate: input kept until output proves the wrapper
        self.fed = 0  # compressed bytes received

    def feed(self, data: bytes, room: int) -> bytes:
        self.fed += len(data)
        seen = self.seen
        if seen is not None:
            seen.append(data)
            if self.fed > 65536:  # no output from 64 KB of input: no fallback to raw deflate any more
                self.seen = None
        try:
            out = self.zlib.decompress(data, max(room, 1))
        except zlib.error:
            if seen is None:
                raise
            # "deflate" sent as raw deflate (no zlib wrapper), as some servers do: every byte again, raw
            self.seen = None
            self.zlib = zlib.decompressobj(-15)
            self.fed = 0
            return self.feed(b"".join(seen), room)
        if out and seen is not None:
            self.seen = None
        if self.gzip and self.zlib.eof and self.zlib.unused_data:  # the next gzip member
            rest = self.zlib.unused_data
            self.zlib = zlib.decompressobj(31)
            out += self.feed(rest, max(room - len(out), 1))
        elif not self.gzip and self.zlib.eof and self.zlib.unused_data:
            raise zlib.error("data after the end of the deflate stream")
        return out

    def finished(self) -> bool:
        return self.zlib.eof
