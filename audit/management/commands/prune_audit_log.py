"""`manage.py prune_audit_log`: delete the audit records older than GATEWAY_AUDIT_RETENTION_DAYS.

The rules are in audit/retention.py."""

from django.conf import settings
from django.core.management.base import BaseCommand

from audit.retention import prune


class Command(BaseCommand):
    help = "Delete the audit records older than GATEWAY_AUDIT_RETENTION_DAYS (0: keep every record)."

    def handle(self, *args, **options) -> None:
        days = settings.GATEWAY_AUDIT_RETENTION_DAYS
        if days <= 0:
            self.stdout.write("GATEWAY_AUDIT_RETENTION_DAYS is 0: every audit record is kept")
            return
        self.stdout.write(f"deleted {prune()} audit record(s) older than {days:g} day(s)")
