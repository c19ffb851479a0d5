from django.apps import AppConfig


class ResponseCacheConfig(AppConfig):
    """The response cache of the data plane: exact-match answers replayed at no cost (docs/cache.md)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "responsecache"
    verbose_name = "Response cache"
