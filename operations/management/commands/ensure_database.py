"""python manage.py ensure_database: the database DATABASE_URL names exists, or one clear line says why not.

`make run` calls it before `migrate`, so a new PostgreSQL database name (`DATABASE_URL=postgres://.../newdb`)
is created when the user may create databases, and otherwise the operator reads what to do instead of a
traceback. SQLite creates its file on first use; only a missing folder is reported.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import OperationalError, ProgrammingError


class Command(BaseCommand):
    help = "Create the configured database when it is missing (PostgreSQL), or explain in one line why it can't."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args, **options):
        connection = connections[options["database"]]
        name = connection.settings_dict["NAME"]
        if connection.vendor == "sqlite":
            folder = Path(str(name)).parent
            if str(name) != ":memory:" and not folder.is_dir():
                raise CommandError(f"the folder of the SQLite database {name} does not exist; create it first")
            return
        try:
            connection.ensure_connection()
            return
        except OperationalError as exc:
            if f'database "{name}" does not exist' not in str(exc):
                raise CommandError(f"cannot connect to database {name!r}: {_first_line(exc)}") from None
        finally:
            connection.close()
        try:
            # Django's test-database creation goes the same way: through the server's maintenance database.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "unable to create a connection to 'postgres'"
                with connection._nodb_cursor() as cursor:
                    cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        except (OperationalError, ProgrammingError) as exc:
            raise CommandError(
                f"database {name!r} does not exist and could not be created ({_first_line(exc)}); "
                f"create it with: createdb -h <host> -U <user> {name}"
            ) from None
        self.stdout.write(f"Created database {name!r}")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
