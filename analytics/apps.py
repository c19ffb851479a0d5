from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    """Usage analytics: hourly rollups kept at accounting time, the usage and activity APIs, the admin dashboard."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "analytics"

    def ready(self) -> None:
        from analytics import receivers  # noqa: F401  (connects the rollup upsert to accounting)
