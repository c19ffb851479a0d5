"""The served protocol sends the writes of one event-loop turn in one transport write (server_protocol.py)."""

from __future__ import annotations

import asyncio

from gateway_project.server_protocol import CoalescingTransport


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = False
        self.paused = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def pause_reading(self) -> None:
        self.paused = True


def test_writes_of_one_turn_go_out_together_in_order():
    async def scenario():
        raw = RecordingTransport()
        transport = CoalescingTransport(raw, asyncio.get_running_loop())
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        assert raw.writes == []  # kept until the turn ends
        await asyncio.sleep(0)
        assert raw.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        transport.write(b"data: 1\n\n")
        await asyncio.sleep(0)
        transport.writelines([b"data: 2\n\n", b"", b"data: 3\n\n"])
        await asyncio.sleep(0)
        assert raw.writes[1:] == [b"data: 1\n\n", b"data: 2\n\ndata: 3\n\n"]
        transport.pause_reading()  # anything else is the transport's own
        assert raw.paused

    asyncio.run(scenario())


def test_close_sends_what_is_kept_and_abort_drops_it():
    async def scenario():
        raw = RecordingTransport()
        transport = CoalescingTransport(raw, asyncio.get_running_loop())
        transport.write(b"last words")
        transport.close()
        assert raw.writes == [b"last words"] and raw.closed
        await asyncio.sleep(0)  # the scheduled flush finds nothing left
        assert raw.writes == [b"last words"]

        raw = RecordingTransport()
        transport = CoalescingTransport(raw, asyncio.get_running_loop())
        transport.write(b"never sent")
        transport.abort()
        await asyncio.sleep(0)
        assert raw.writes == [] and raw.aborted and transport.is_closing()

    asyncio.run(scenario())
