"""Signals of the response cache, for the apps above it (the audit log records purges: audit/apps.py)."""

from django.dispatch import Signal

# Sent after an organization's entries were purged (or the purge failed half-way), with keyword arguments
# `organization_id`, `model` (None: every model), `purged` (entries deleted), `command` (the management command
# that purged them, None within a request) and `more` (a dict of further facts, e.g. Redis unavailable).
cache_purged = Signal()
