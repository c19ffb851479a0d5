"""DATABASE_DISABLE_SERVER_SIDE_CURSORS (PostgreSQL behind pgbouncer in transaction mode) reaches Django's
database settings; off by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
READ = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gateway_project.settings'); django.setup();"
    "from django.conf import settings; print(settings.DATABASES['default']['DISABLE_SERVER_SIDE_CURSORS'])"
)


@pytest.mark.parametrize(("value", "expected"), [(None, "False"), ("true", "True"), ("false", "False")])
def test_server_side_cursors_setting(value, expected):
    env = {**os.environ, "DATABASE_URL": "postgres://gateway@127.0.0.1:6432/gateway", "DJANGO_SECRET_KEY": "x"}
    env.pop("DATABASE_DISABLE_SERVER_SIDE_CURSORS", None)
    if value is not None:
        env["DATABASE_DISABLE_SERVER_SIDE_CURSORS"] = value
    command = [sys.executable, "-c", READ]
    out = subprocess.run(command, cwd=BASE_DIR, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == expected
