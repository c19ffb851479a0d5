"""manage.py purge_response_cache: delete expired entries of the database store, or an organization's entries.

Purging an organization's entries is recorded in the audit log (source `command`, the operating system account
as the actor); the periodic `--expired` clean-up is not (those entries can no longer be served)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.models import Organization
from responsecache.services import cache_purge, cache_purge_expired


class Command(BaseCommand):
    help = (
        "Delete the response cache's expired database entries (--expired, for a periodic job), or every entry of "
        "an organization (--organization ID, optionally --model SLUG), in the database and in Redis."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--expired", action="store_true", help="Delete expired database entries")
        parser.add_argument("--organization", help="Organization id whose entries are deleted")
        parser.add_argument("--model", help="With --organization: only entries answered by this model slug")

    def handle(self, *args, expired: bool, organization: str | None, model: str | None, **options) -> None:
        if expired == bool(organization):
            raise CommandError("give either --expired or --organization")
        if model and not organization:
            raise CommandError("--model needs --organization")
        if expired:
            self.stdout.write(f"{cache_purge_expired()} expired entries deleted")
            return
        try:
            org = Organization.objects.get(pk=organization)
        except (Organization.DoesNotExist, ValidationError, ValueError) as exc:
            raise CommandError(f"no organization {organization}") from exc
        deleted = cache_purge(organization_id=org.pk, model=model, command="purge_response_cache")
        self.stdout.write(f"{deleted} entries deleted (recorded in the audit log)")
