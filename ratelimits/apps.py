import asyncio

from django.apps import AppConfig


def redis_pending() -> int:
    """This event loop's Redis leases not ended yet and settlements waiting for their script. A lease ends
    GATEWAY_RATE_LIMIT_LEASE_MS after it was granted and what it returns goes SETTLE_DELAY_MS later: waiting for
    them (and for the scripts sent) lets a stopping process give back the slots and tokens it holds instead of
    leaving them held."""
    from ratelimits import redis_store

    try:
        loop_id = id(asyncio.get_running_loop())
    except RuntimeError:
        return 0
    leases, unsettled = redis_store._leases.get(loop_id), redis_store._unsettled.get(loop_id)
    return (len(leases.settling) if leases else 0) + (len(unsettled.items) + len(unsettled.sending) if unsettled else 0)


def _settlements_in_flight() -> int:
    """Settlements running as tasks (database store), and Redis leases and settlements not sent yet."""
    from ratelimits.limiter import _settling

    return len(_settling) + redis_pending()


class RateLimitsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ratelimits"
    verbose_name = "Rate limits"

    def ready(self) -> None:
        from gateway_project.lifespan import on_shutdown

        on_shutdown(in_progress=_settlements_in_flight)  # shutdown waits for them (at most the shutdown drain)
