"""The rankings' large reads run with more memory on PostgreSQL and never wait for a writer on SQLite.

On SQLite every transaction takes the write lock at its start (BEGIN IMMEDIATE, gateway_project/db_options.py),
so a read that opened one would wait for the data plane's writes and make them wait in turn; the reads run
outside any transaction there. On PostgreSQL they run in a transaction of their own with `SET LOCAL work_mem`.
"""

from __future__ import annotations

import threading
import time
from datetime import date

from django.db import connection, transaction

from rankings.models import DailyModelTotal
from rankings.roomy_read import roomy_read
from rankings.selectors import RankingQuery, rankings


def _hold_a_write(locked: threading.Event, seconds: float) -> threading.Thread:
    def hold() -> None:
        try:
            with transaction.atomic():
                DailyModelTotal.objects.create(date=date(2026, 3, 4), model_permaslug="a/one", total_tokens=5)
                locked.set()
                time.sleep(seconds)  # a writer in the middle of its transaction
        finally:
            locked.set()
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def test_the_dataset_is_read_while_a_writer_holds_its_transaction(transactional_db):
    locked = threading.Event()
    writer = _hold_a_write(locked, seconds=3)
    try:
        assert locked.wait(10)
        started = time.monotonic()
        rows = rankings(RankingQuery(start_date=date(2026, 3, 1), end_date=date(2026, 3, 31), period="day"))
        waited = time.monotonic() - started
    finally:
        writer.join(30)
    assert rows == []  # the writer's row is not committed yet
    assert waited < 1.5, f"the read waited {waited:.2f} s for the writer"


def test_work_mem_is_raised_for_the_read_only(transactional_db):
    if connection.vendor != "postgresql":
        with roomy_read("64MB"):
            assert not connection.in_atomic_block  # no transaction, so no write lock
        return
    with connection.cursor() as cursor:
        cursor.execute("SHOW work_mem")
        before = cursor.fetchone()[0]
        with roomy_read("64MB", jit=False):
            cursor.execute("SHOW work_mem")
            inside = cursor.fetchone()[0]
            cursor.execute("SHOW jit")
            jit = cursor.fetchone()[0]
        cursor.execute("SHOW work_mem")
        after = cursor.fetchone()[0]
    assert (inside, jit) == ("64MB", "off")
    assert after == before != "64MB"
