from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log: who changed what through the API, the admin or SCIM, and the data plane's refusals."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "audit"

    def ready(self) -> None:
        from audit import recording
        from audit.refusals import record_refusal
        from operations.measure import after_response
        from responsecache.signals import cache_purged

        recording.connect()
        cache_purged.connect(recording.record_cache_purge, dispatch_uid="audit:cache_purged")
        if record_refusal not in after_response:
            after_response.append(record_refusal)
