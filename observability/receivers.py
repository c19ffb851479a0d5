"""Signal receivers of the observability app."""

from __future__ import annotations

from observability.outbox import outbox_record


def on_generation_recorded(sender, *, generation, ctx=None, **kwargs) -> None:
    """`inference.signals.generation_recorded`: queue the generation's traces in the same transaction."""
    outbox_record(generation=generation, ctx=ctx)
