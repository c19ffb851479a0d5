"""Django admin of the catalog and of Generation records."""

from django import forms
from django.contrib import admin

from gateway_project.netguard import url_problem
from inference.models import Endpoint, Generation, Model, Provider


class ProviderForm(forms.ModelForm):
    """Refuses a base_url in a private network unless settings allow it (gateway_project.netguard)."""

    base_url = forms.URLField(label="Base URL", max_length=500, required=False, assume_scheme="https")

    class Meta:
        model = Provider
        fields = [f.name for f in Provider._meta.get_fields() if f.concrete and f.editable and not f.primary_key]

    def clean_base_url(self):
        base_url = self.cleaned_data.get("base_url")
        problem = url_problem(base_url) if base_url else None
        if problem:
            raise forms.ValidationError(f"base_url {problem}")
        return base_url


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = ("slug", "name", "api_format", "base_url", "api_key_env", "zdr", "trains_on_data", "enabled")
    list_filter = ("api_format", "zdr", "trains_on_data", "publishes_prompts", "enabled")
    search_fields = ("slug", "name")


class EndpointInline(admin.TabularInline):
    model = Endpoint
    extra = 0


@admin.register(Model)
class ModelAdmin(admin.ModelAdmin):
    list_display = ("slug", "canonical_slug", "vendor", "public", "context_length", "quality_scores", "enabled")
    list_filter = ("vendor", "public", "enabled")
    search_fields = ("slug", "canonical_slug", "name")
    inlines = [EndpointInline]


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ("model", "provider", "upstream_model", "prompt_price", "completion_price", "is_free", "enabled")
    list_filter = ("provider", "is_free", "enabled")
    search_fields = ("model__slug", "provider__slug", "upstream_model")


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "created_at",
        "organization",
        "model",
        "provider",
        "status",
        "input_tokens",
        "output_tokens",
        "cost",
        "is_byok",
        "streamed",
        "ingress_format",
        "latency_ms",
    )
    list_filter = ("status", "provider", "is_byok", "streamed", "ingress_format")
    search_fields = ("id", "model", "key_hash", "session_id", "upstream_id")
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
