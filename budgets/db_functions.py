"""The budgets app's PostgreSQL functions, each defined once: its `CREATE OR REPLACE FUNCTION` statement is
budgets/sql/<name>.sql, read by the one migration that creates it (`function_operation`) and by nothing else.

A changed signature or behaviour is a new function name (`_v2`, `_v3`) in a new file with its own migration;
the older versions stay for the processes of the previous release during a rolling deploy. On other databases
the operations do nothing (the statements run one by one there, budgets/counters.py).
"""

from __future__ import annotations

from pathlib import Path

from django.db import migrations

SQL_DIR = Path(__file__).resolve().parent / "sql"
# Argument types of each function (what DROP FUNCTION names).
SIGNATURES = {
    "budgets_spend_hold_v1": "bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, timestamptz, timestamptz",
    "budgets_spend_hold_v2": "bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, timestamptz, timestamptz",
    "budgets_spend_hold_v3": (
        "bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, timestamptz, timestamptz, jsonb"
    ),
    "budgets_spend_settle_v1": "uuid[], bigint[], bigint[], boolean[], integer[], bigint[]",
    "budgets_spend_settle_v2": "uuid[], uuid[], bigint[], bigint[], boolean[], integer[], bigint[], timestamptz",
}


def create_statement(name: str) -> str:
    """The `CREATE OR REPLACE FUNCTION` statement of function `name`."""
    return (SQL_DIR / f"{name}.sql").read_text()


def drop_statement(name: str) -> str:
    return f"DROP FUNCTION IF EXISTS {name}({SIGNATURES[name]});"


def function_operation(name: str) -> migrations.RunPython:
    """The migration operation creating function `name` on PostgreSQL (dropping it when unapplied)."""

    def create(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(create_statement(name))

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(drop_statement(name))

    return migrations.RunPython(create, drop, elidable=False)
