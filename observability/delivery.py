"""The payload of one delivery, built by the worker at delivery time from the generation's stored trace.

The destination's `filter_rules` (RE2, linear time) are evaluated here, never in the request's accounting
transaction; then its privacy mode, broadcast flags and the row's I/O logging decision are applied.
"""

from __future__ import annotations

from gateway_project.encryption import DecryptionFailed
from observability.bodies import unseal
from observability.filters import compile_filter_rules
from observability.models import OutboxEntry, TraceBody
from observability.payload import filter_record, trace_for

_filters: dict = {}  # (destination id, updated_at) -> compiled filter_rules


def destination_filter(destination):
    """The destination's compiled `filter_rules` (None: everything passes), compiled once per version."""
    key = (destination.id, destination.updated_at)
    if key not in _filters:
        if len(_filters) > 1000:
            _filters.clear()
        _filters[key] = compile_filter_rules(destination.filter_rules)
    return _filters[key]


class Undeliverable(Exception):
    """The row cannot be delivered (its trace is gone or unreadable): it goes dead with this message."""


def delivery_payload(row: OutboxEntry, token: str | None = None) -> dict | None:
    """The trace this row sends to its destination, or None when the destination's filter rules leave it out.

    `token` is the row's stored trace (loaded when not given). Raises Undeliverable."""
    if row.payload is not None:  # queued by a version that copied the trace into each row
        return row.payload
    if token is None:
        token = TraceBody.objects.filter(pk=row.generation_id).values_list("data", flat=True).first()
    if token is None:
        raise Undeliverable("the stored trace is gone (GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS)")
    try:
        trace = unseal(token)
    except DecryptionFailed:
        raise Undeliverable("the stored trace cannot be decrypted with GATEWAY_BYOK_ENCRYPTION_KEYS") from None
    matches = destination_filter(row.destination)
    if matches is not None and not matches(filter_record(trace)):
        return None
    return trace_for(trace, row.destination, include_io=row.include_io)
