"""The deadlines of the statements the event loop sends itself (gateway_project/loop_pg.py), checked by one
timer per loop, not one per statement.

Past its deadline a statement fails with `OperationalError`: a queued one at once; a sent one's connection has
its socket shut down (gateway_project/db_deadline.shut_down_socket), so psycopg's wait fails at once, no
cancellation that could stall the loop, and every statement on that connection fails.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from django import db as django_db

from gateway_project.db_deadline import shut_down_socket

if TYPE_CHECKING:
    from gateway_project.loop_pg import Statement


class Deadline:
    """When a statement must have its result: past it, a queued statement fails, a sent one's connection is shut
    down. Checked by the loop's one timer (`Deadlines`)."""

    __slots__ = ("at", "conn", "expired", "statement", "timeout")

    def __init__(self, at: float, timeout: float, conn: Any = None, statement: Statement | None = None) -> None:
        self.at = at
        self.timeout = timeout
        self.conn = conn  # a statement run in its caller's task: the connection it runs on
        self.statement = statement  # a queued statement (sent later, on `statement.conn`)
        self.expired = False

    def expire(self) -> None:
        self.expired = True
        statement = self.statement
        if statement is None:
            shut_down_socket(self.conn.pgconn)
            return
        if not statement.future.done():
            error = django_db.OperationalError(f"the database did not answer within {self.timeout:g} s")
            statement.future.set_exception(error)
            if statement.conn is not None:  # sent: whatever the connection answers next is not for a statement now
                shut_down_socket(statement.conn.pgconn)


class Deadlines(set):
    """The deadlines of one loop's statements waiting for their result (a set: a statement that has its result
    `discard`s its own) and the one timer that expires those past due."""

    __slots__ = ("loop", "watch")

    def __init__(self) -> None:
        super().__init__()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.watch: asyncio.TimerHandle | None = None  # the timer, due at the earliest deadline

    def arm(self, deadline: Deadline, loop: asyncio.AbstractEventLoop) -> None:
        """Watch `deadline` (on `loop`, the database's)."""
        self.add(deadline)
        self.loop = loop
        watch = self.watch
        if watch is None or deadline.at < watch.when():
            if watch is not None:
                watch.cancel()
            self.watch = loop.call_at(deadline.at, self._watch)

    def _watch(self) -> None:
        self.watch = None
        now = self.loop.time()
        for deadline in [d for d in self if d.at <= now]:
            self.discard(deadline)
            deadline.expire()
        if self:
            self.watch = self.loop.call_at(min(d.at for d in self), self._watch)

    def cancel(self) -> None:
        """Stop the timer (the database closes)."""
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
