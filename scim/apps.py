from django.apps import AppConfig


class ScimConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scim"
    verbose_name = "SCIM provisioning"
