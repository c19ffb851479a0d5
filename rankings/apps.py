from django.apps import AppConfig


class RankingsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rankings"

    def ready(self) -> None:
        from rankings import receivers  # noqa: F401  (classification of sampled generations)
