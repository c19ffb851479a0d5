"""Signals of the data plane, so other apps can take part in accounting without the inference app knowing them.

- `generation_recording(sender=Generation, generation, ctx)`: before the row is saved; receivers may set
  fields on the unsaved `generation` (for example a sampled classification).
- `generation_recorded(sender=Generation, generation, ctx)`: after the row is saved, inside the same
  database transaction (for example the observability outbox rows, so nothing is lost).
- `generations_recorded(sender=Generation, generations)`: once per batch, after every row of it was saved, in
  the same transaction (for example the hourly usage rollups, summed over the batch).
"""

from django.dispatch import Signal

generation_recording = Signal()
generation_recorded = Signal()
generations_recorded = Signal()
