"""`EventDeadline`: a stream's limit between two events, as `asyncio.timeout(seconds)` around each wait for an
event would be, with one loop timer for the whole stream instead of one armed and cancelled per wait.

Each `with deadline:` block may last at most `seconds`; running out cancels the block's task and the block
raises `TimeoutError` (as `asyncio.timeout` does: a cancellation from anything else stays a `CancelledError`).
Time between blocks (the consumer handling the events) does not count. Entering a block only moves the deadline
forward; the timer, when it comes due, is re-armed at the moved deadline if a later block began in between,
and does nothing if no block is running. A stream with an event a second and a two-minute limit so arms one
timer, not one per event (a block costs about 1 µs under uvloop against 6-10 µs for an `asyncio.timeout`,
docs/performance.md "The upstream call"). `close()` drops the timer.
"""

from __future__ import annotations

import asyncio


class EventDeadline:
    __slots__ = ("_armed_for", "_deadline", "_expired", "_handle", "_loop", "_running", "_seconds", "_task")

    def __init__(self, seconds: float | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._seconds = seconds  # None: no limit
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = 0.0  # the deadline the timer was armed at
        self._deadline = 0.0
        self._task: asyncio.Task | None = None
        self._running = False
        self._expired = False

    def __enter__(self) -> EventDeadline:
        if self._seconds is None:
            return self
        self._task = asyncio.current_task()
        self._deadline = self._loop.time() + self._seconds
        self._running = True
        if self._handle is None:
            self._arm()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._running = False
        if self._expired:
            self._expired = False
            assert self._task is not None
            if self._task.uncancel() == 0 and exc_type is asyncio.CancelledError:
                raise TimeoutError

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._armed_for = self._deadline
        self._handle = self._loop.call_at(self._deadline, self._due)

    def _due(self) -> None:
        self._handle = None
        if not self._running:
            return  # the next block arms it again
        if self._deadline > self._armed_for:
            self._arm()  # a block began since it was armed: its deadline is later
            return
        self._expired = True
        assert self._task is not None
        self._task.cancel()
