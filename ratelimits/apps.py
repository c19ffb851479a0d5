from django.apps import AppConfig


class RateLimitsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ratelimits"
    verbose_name = "Rate limits"
