"""Django's database exceptions for psycopg's, for the statements the event loop sends itself
(gateway_project/loop_pg.py): the data plane's 503 mapping (gateway_project/api/errors.py) sees what Django's
own connection would have raised (`OperationalError` for a lost or unreachable server, a statement or lock
timeout)."""

from __future__ import annotations

import psycopg
from django import db as django_db

_DJANGO_ERRORS = (
    django_db.DataError,
    django_db.OperationalError,
    django_db.IntegrityError,
    django_db.InternalError,
    django_db.ProgrammingError,
    django_db.NotSupportedError,
    django_db.DatabaseError,
    django_db.InterfaceError,
    django_db.Error,
)
_BAD = psycopg.pq.ConnStatus.BAD


def django_error(error: psycopg.Error) -> django_db.Error:
    """Django's exception for a psycopg one (as `DatabaseWrapper.wrap_database_errors` maps them)."""
    for django_class in _DJANGO_ERRORS:
        if isinstance(error, getattr(psycopg, django_class.__name__)):
            wrapped = django_class(*error.args)
            wrapped.__cause__ = error
            return wrapped
    return django_db.Error(str(error))  # pragma: no cover - every psycopg error is a psycopg.Error


def statement_error(error: psycopg.Error, conn: psycopg.AsyncConnection) -> django_db.Error:
    """`django_error` of a statement's failure on `conn`; an `OperationalError` whatever psycopg raised when the
    connection broke."""
    wrapped = django_error(error)
    if conn.pgconn.status == _BAD and not isinstance(wrapped, django_db.OperationalError):
        wrapped = django_db.OperationalError(str(error))
        wrapped.__cause__ = error
    return wrapped
