"""`make run` on a DATABASE_URL naming a database that does not exist yet: created when the user may, otherwise
one line saying what to do (never a traceback). Runs `manage.py ensure_database` as `make run` does."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from tests.budgets.test_concurrency import database_url

ROOT = Path(__file__).resolve().parents[2]


def _ensure(database: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database, "DJANGO_SECRET_KEY": "x", "REDIS_URL": ""}
    return subprocess.run(
        [sys.executable, "manage.py", "ensure_database"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def _postgres_url(**changes) -> str:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    return database_url({**connection.settings_dict, **changes})


@pytest.mark.django_db
def test_a_missing_postgresql_database_is_created_once():
    name = f"gateway_new_{uuid.uuid4().hex[:10]}"
    url = _postgres_url(NAME=name)
    try:
        first = _ensure(url)
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == f"Created database '{name}'" and first.stderr == ""
        again = _ensure(url)
        assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
    finally:
        with connection._nodb_cursor() as cursor:  # outside the test's transaction, as CREATE was
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.mark.django_db
def test_a_database_that_cannot_be_reached_is_one_line_not_a_traceback():
    url = _postgres_url(NAME="gateway_never_created", USER="no_such_role_here")
    result = _ensure(url)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "cannot connect to database 'gateway_never_created'" in result.stderr
    assert 'role "no_such_role_here" does not exist' in result.stderr


def test_sqlite_in_a_missing_folder_is_one_line(tmp_path):
    result = _ensure(f"sqlite:///{tmp_path}/no/such/folder/db.sqlite3")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"CommandError: the folder of the SQLite database {tmp_path}/no/such/folder/db.sqlite3 does not exist; "
        "create it first"
    )
