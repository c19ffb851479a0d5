"""The send's time limits as aiohttp gets them, and `EventDeadline`, the stream's limit between two events."""

from __future__ import annotations

import asyncio

import pytest

from inference.providers.base import Timeouts
from inference.providers.deadline import EventDeadline
from inference.providers.http import _client_timeout


def test_aiohttp_gets_the_connect_limit_and_a_socket_read_limit_for_streams_only():
    timeouts = Timeouts(connect=1.5, first_byte=2.5, read=3.5, total=4.5)
    stream, json = _client_timeout(timeouts, True), _client_timeout(timeouts, False)
    assert stream.sock_read == 3.5 and json.sock_read is None  # a JSON call: post_json's `total` bounds it
    assert stream.connect == stream.sock_connect == json.connect == json.sock_connect == 1.5
    assert stream.total is None and json.total is None
    assert _client_timeout(Timeouts(read=9), True).sock_read == 9  # cached per limits, not per stream flag alone


async def test_a_block_longer_than_the_limit_raises_timeout_error():
    deadline = EventDeadline(0.05)
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError):
        with deadline:
            await asyncio.sleep(5)
    assert asyncio.get_running_loop().time() - started < 1
    deadline.close()


async def test_only_the_time_inside_blocks_counts_and_each_block_gets_the_whole_limit():
    # Blocks 0.25 s under the limit: a loop held up that long (a loaded CI machine) would fail the test.
    deadline = EventDeadline(0.4)
    for _ in range(4):  # the timer comes due inside a later block: it is moved to that block's deadline
        with deadline:
            await asyncio.sleep(0.15)  # each block under the limit, all of them together past it
        await asyncio.sleep(0.02)
    with deadline:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.6)  # the consumer's time: the timer comes due here and does nothing
    with deadline:
        await asyncio.sleep(0.15)
    with pytest.raises(TimeoutError):  # the limit still holds after the timer was re-armed
        with deadline:
            await asyncio.sleep(5)
    deadline.close()


async def test_a_cancellation_from_elsewhere_stays_a_cancellation():
    deadline = EventDeadline(5)

    async def wait():
        with deadline:
            await asyncio.sleep(5)

    task = asyncio.create_task(wait())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline.close()


async def test_no_limit_and_close_leave_the_task_alone():
    with EventDeadline(None):
        await asyncio.sleep(0.02)
    deadline = EventDeadline(0.05)
    with deadline:
        await asyncio.sleep(0)
    deadline.close()
    await asyncio.sleep(0.1)  # the timer was dropped: nothing cancels this task
