"""`EventDeadline`, the stream's limit between two events (the connect limit: test_upstream_client.py)."""

from __future__ import annotations

import asyncio

import pytest

from inference.providers.deadline import EventDeadline


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
