import asyncio

from django.apps import AppConfig


def _measured_in_progress() -> int:
    """Requests whose answer is sent but whose after-response work (metrics, refusal audit) still runs."""
    from operations.measure import active

    return active.count


async def _close_health_thread() -> None:
    from operations.health import health_thread

    await asyncio.to_thread(health_thread.shutdown)


class OperationsConfig(AppConfig):
    """Operator surfaces: static files under ASGI, health, metrics."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "operations"

    def ready(self) -> None:
        from gateway_project.lifespan import on_shutdown

        on_shutdown(in_progress=_measured_in_progress, close=_close_health_thread)
