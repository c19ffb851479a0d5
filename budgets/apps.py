from django.apps import AppConfig


def _settlements_in_flight() -> int:
    from budgets.settler import settler

    return settler.in_flight()


class BudgetsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "budgets"

    def ready(self) -> None:
        from accounts.key_limits import register_key_budgets
        from budgets import turns
        from budgets.key_budgets import key_budgets
        from budgets.models import WorkspaceBudget
        from gateway_project.lifespan import on_shutdown
        from gateway_project.policy_cache import watch_models
        from inference.servertools.budget import register_turn_holds

        # The data plane caches workspace budgets per policy version: a change applies to the next request.
        watch_models(WorkspaceBudget)
        on_shutdown(in_progress=_settlements_in_flight)  # shutdown waits for queued settlements
        register_key_budgets(key_budgets)  # GET /key and GET /credits show the key's budgets
        register_turn_holds(turns)  # the server-tool loop holds each turn against the request's limits
