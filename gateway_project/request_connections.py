"""The management plane's database connections closed when their request ends.

Django's ASGI handler runs each request's synchronous code in a thread of its own (`ThreadSensitiveContext`),
so a connection kept open for reuse (`CONN_MAX_AGE`) is never reused: its thread ends with the request, and
the connection stays open until the cyclic garbage collector frees its `DatabaseWrapper` (which is always in a
reference cycle). Requests leave no other cyclic garbage (tests/inference/test_reference_cycles.py), so the
collector runs rarely and such connections would pile up towards PostgreSQL's `max_connections`. Here they are
closed at `request_finished`, in the request's thread, for requests served by the ASGI handler only: the data
plane's long-lived threads keep their connections, and the test client's requests (another handler) keep the
test's transaction.
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished
from django.db import connections


def close_request_connections(sender, **kwargs) -> None:
    if isinstance(sender, type) and issubclass(sender, ASGIHandler):
        connections.close_all()


def connect() -> None:
    request_finished.connect(close_request_connections, dispatch_uid="gateway_close_request_connections")
