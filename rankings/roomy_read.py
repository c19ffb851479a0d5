"""Large read-only queries of the rankings (the daily aggregation's GROUP BY, the dataset's reads), with more
memory on PostgreSQL.

On PostgreSQL the query runs in a transaction of its own, where `SET LOCAL` raises `work_mem` (and turns JIT
off when asked) for that transaction only. Elsewhere no transaction is opened: on SQLite every transaction
begins with BEGIN IMMEDIATE and holds the write lock (gateway_project/db_options.py), and a long read must not
make the data plane's writes (holds, accounting) wait for it; a read outside a transaction takes no lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def roomy_read(work_mem: str, *, jit: bool = True) -> Iterator[None]:
    """Run the block's queries with `work_mem` (e.g. "64MB") and, with `jit=False`, without JIT on PostgreSQL."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL work_mem = '{work_mem}'")
            if not jit:
                cursor.execute("SET LOCAL jit = off")
        yield
