"""The `interrupted` Generation rows the budget reaper writes (budgets/recovery.py) for requests whose process lost
the database for longer than their hold's TTL, and the clause by which such a request's own row, written late,
replaces the one the reaper wrote. The clause is about inference's own table, so it lives here; with no reaper
installed it matches nothing.
"""

from __future__ import annotations


def replacing_interrupted(conn, fields, table: str) -> str:
    """The clause by which a request's own row replaces the `interrupted` row the reaper wrote for it (its process
    lost the database for longer than the hold's TTL, then finished), for inference/accounting.py's insert. The
    primary key is checked on every insert anyway: no extra statement, no extra lookup."""
    quote = conn.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = excluded.{quote(f.column)}" for f in fields if not f.primary_key)
    return f" ON CONFLICT ({quote('id')}) DO UPDATE SET {assignments} WHERE {table}.{quote('status')} = 'interrupted'"
