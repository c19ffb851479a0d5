from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "budgets"

    def ready(self) -> None:
        from budgets.models import WorkspaceBudget
        from gateway_project.policy_cache import watch_models

        # The data plane caches workspace budgets per policy version: a change applies to the next request.
        watch_models(WorkspaceBudget)
