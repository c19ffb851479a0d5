"""Database connection options: SQLite's, and PostgreSQL's that bound every wait (docs/reliability.md section 6).

SQLite: WAL and a busy timeout let the server and the worker processes share the file. Transactions begin with
BEGIN IMMEDIATE: a deferred transaction that read before another connection committed a write cannot write any
more ("database is locked" at once, the busy timeout does not apply); an immediate one takes the write lock at
its start and other writers wait for it under the timeout.

PostgreSQL, client side, for every process: `connect_timeout`, TCP keepalives (an idle connection whose peer vanished is
noticed), `tcp_user_timeout` (data the server never acknowledges). Server side, for the processes that
serve requests only: `statement_timeout` and `lock_timeout`, sent as startup options. Management commands
(`migrate`, `aggregate_rankings`, ...) and the test runner (creating and dropping test databases) may
legitimately run long statements and get neither.
"""

from __future__ import annotations

import sys
from pathlib import Path

SQLITE_OPTIONS = {
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
}


def serves_requests(argv: list[str] | None = None) -> bool:
    """False for `manage.py <command>` (other than runserver) and for pytest; True for the ASGI servers."""
    argv = sys.argv if argv is None else argv
    program = Path(argv[0]).name if argv else ""
    if program == "manage.py":
        return argv[1:2] == ["runserver"]
    # `pytest` and `python -m pytest` (argv[0] is then .../pytest/__main__.py).
    return not any("pytest" in part or "py.test" in part for part in Path(argv[0]).parts[-2:]) if argv else True


def postgres_options(env, *, server_limits: bool) -> dict:
    options = {
        "connect_timeout": env.int("DATABASE_CONNECT_TIMEOUT", default=3),
        "keepalives": 1,
        "keepalives_idle": env.int("DATABASE_KEEPALIVES_IDLE", default=30),
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "tcp_user_timeout": env.int("DATABASE_TCP_USER_TIMEOUT_MS", default=10_000),
    }
    limits = [
        f"-c {name}={value}"
        for name, value in (
            ("statement_timeout", env.int("DATABASE_STATEMENT_TIMEOUT_MS", default=30_000)),
            ("lock_timeout", env.int("DATABASE_LOCK_TIMEOUT_MS", default=5_000)),
        )
        if value
    ]
    if server_limits and limits:
        options["options"] = " ".join(limits)
    return options
