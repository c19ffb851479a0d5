"""Rollups follow accounting: every batch of Generation rows is added to its hourly buckets as it is written."""

from __future__ import annotations

from django.dispatch import receiver

from analytics.rollup import rollup_generations
from inference.models import Generation
from inference.signals import generations_recorded


@receiver(generations_recorded, sender=Generation, dispatch_uid="analytics.rollup")
def add_to_rollups(sender, generations, **kwargs) -> None:
    rollup_generations(generations)
