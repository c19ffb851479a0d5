from django.apps import AppConfig


def _settlements_in_flight() -> int:
    from ratelimits.limiter import _settling

    return len(_settling)


class RateLimitsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ratelimits"
    verbose_name = "Rate limits"

    def ready(self) -> None:
        from gateway_project.lifespan import on_shutdown

        on_shutdown(in_progress=_settlements_in_flight)  # shutdown waits for settlements running as tasks
