import asyncio

from django.apps import AppConfig


def _in_progress() -> int:
    """Inference requests running (accounting included) plus accounting writes still queued."""
    from inference.consumers import responses_consumer
    from inference.recorder import writer

    return responses_consumer.active + writer.in_flight()


async def _close() -> None:
    """At shutdown: the upstream client session, then the accounting writer's database connection."""
    from inference import recorder
    from inference.providers.http import close_session

    await close_session()
    await asyncio.to_thread(recorder.shutdown)


class InferenceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "inference"

    def ready(self) -> None:
        from accounts.usage import register_usage_source
        from gateway_project.lifespan import on_shutdown
        from gateway_project.policy_cache import watch_models
        from inference import key_usage
        from inference.models import Endpoint, Model, Provider

        watch_models(Provider, Model, Endpoint)
        register_usage_source(key_usage)  # key spend for accounts' key records (accounts does not import inference)
        on_shutdown(in_progress=_in_progress, close=_close)
