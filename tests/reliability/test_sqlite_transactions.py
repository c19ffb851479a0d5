"""A transaction that reads and then writes is never refused because another connection wrote in between.

On SQLite a transaction opened with a plain (deferred) BEGIN holds a read snapshot until its first write; when
another connection commits a write in the meantime, that first write fails at once with "database is locked"
(SQLITE_BUSY_SNAPSHOT: the busy timeout does not apply, as waiting cannot help a stale snapshot), and the
management API answered 503 to an ordinary PUT while requests' accounting was being written. Every
transaction therefore begins with BEGIN IMMEDIATE on SQLite (gateway_project/db_options.py): it takes the
write lock at its start, and other writers wait for it under the busy timeout. On PostgreSQL the same
interleaving succeeds through row-level locking; the test runs on both.
"""

from __future__ import annotations

import threading

from django.db import connection, transaction


def test_a_write_committed_between_a_transactions_read_and_its_write_does_not_fail_it(transactional_db, org):
    from accounts.models import Workspace
    from budgets.services import budget_put

    read, written = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def other_connection() -> None:  # what the accounting writer does while the PUT runs
        try:
            read.wait(5)
            Workspace.objects.filter(pk=org.workspace.pk).update(description="written by another connection")
        except BaseException as error:  # reported by the assertion below
            errors.append(error)
        finally:
            written.set()
            connection.close()

    writer = threading.Thread(target=other_connection)
    writer.start()
    try:
        with transaction.atomic():
            list(Workspace.objects.filter(pk=org.workspace.pk))  # the transaction's read
            read.set()
            written.wait(1)  # the other connection commits here, or waits for this transaction (BEGIN IMMEDIATE)
            budget_put(workspace=org.workspace, interval="daily", limit_usd=1)
    finally:
        read.set()
        writer.join(30)
    assert not writer.is_alive()
    assert errors == []
    org.workspace.refresh_from_db()
    assert org.workspace.description == "written by another connection"
    assert org.workspace.budgets.get(reset_interval="daily").limit_usd == 1
