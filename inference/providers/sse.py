"""Incremental server-sent events decoder (the WHATWG event-stream format), pure and network-free.

Feed it the body bytes as they arrive, in chunks of any size; it returns the complete events. Handles
`\\n`, `\\r\\n` and `\\r` line ends (also split across chunks), `event:` and `data:` fields, multi-line
data (joined with `\\n`), comment lines (`:`), `id:`/`retry:` (ignored), and a trailing event that the
upstream did not terminate with a blank line (`flush()` at end of stream). `[DONE]` is an ordinary data
value here; the adapters' stream parsers decide what it means.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ServerSentEvent:
    event: str  # "" when the frame had no `event:` line
    data: str


class SSEDecoder:
    """Linear in the bytes fed: an unterminated line is kept as a list of chunks and joined once, when the
    chunk that ends it arrives (a line growing without a newline costs one append per chunk, not a copy)."""

    __slots__ = ("_data", "_event", "_pending", "_skip_lf")

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._event = ""
        self._data: list[str] = []
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the `\n` of a `\r\n` split across chunks
        self._skip_lf = False
        if b"\n" not in chunk and b"\r" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            buffer = b"".join(self._pending)
            self._pending = []
        else:
            buffer = chunk
        if b"\r" in buffer:
            self._skip_lf = buffer.endswith(b"\r")
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        events: list[ServerSentEvent] = []
        # `_line` inlined for the usual `event:` / `data:` lines (this loop runs for every line of every stream)
        data, event = self._data, self._event
        for line in lines:
            if not line:
                if data:
                    events.append(ServerSentEvent(event, data[0] if len(data) == 1 else "\n".join(data)))
                event, data = "", []
            elif line.startswith(b"data:"):
                value = line[6:] if line.startswith(b"data: ") else line[5:]
                data.append(value.decode("utf-8", "replace"))
            elif line.startswith(b"event:"):
                value = line[7:] if line.startswith(b"event: ") else line[6:]
                event = value.decode("utf-8", "replace")
            else:
                self._data, self._event = data, event
                self._line(line, events)
                data, event = self._data, self._event
        self._data, self._event = data, event
        return events

    def flush(self) -> list[ServerSentEvent]:
        """End of the body: the unterminated last line and event, if any."""
        events: list[ServerSentEvent] = []
        rest, self._pending = b"".join(self._pending), []
        if rest:
            self._line(rest, events)
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[ServerSentEvent]) -> None:
        if not line:
            if self._data:
                events.append(ServerSentEvent(self._event, "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(b":"):
            return
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
