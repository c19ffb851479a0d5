"""Django admin of the aggregated rankings tables (read-only: they are rebuilt by aggregate_rankings)."""

from django.contrib import admin

from rankings.models import AggregatedDay, DailyModelTokens, DailyModelTotal, RateLimitCounter, WeeklySampledTokens


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DailyModelTotal)
class DailyModelTotalAdmin(ReadOnlyAdmin):
    list_display = ("date", "model_permaslug", "total_tokens")
    list_filter = ("date",)
    search_fields = ("model_permaslug",)
    date_hierarchy = "date"


@admin.register(DailyModelTokens)
class DailyModelTokensAdmin(ReadOnlyAdmin):
    list_display = (
        "date",
        "model_permaslug",
        "context_bucket",
        "output_text",
        "output_image",
        "input_image",
        "input_audio",
        "tool_calling",
        "total_tokens",
        "requests",
    )
    list_filter = ("context_bucket", "tool_calling", "output_image", "input_image", "input_audio")
    search_fields = ("model_permaslug",)
    date_hierarchy = "date"


@admin.register(WeeklySampledTokens)
class WeeklySampledTokensAdmin(ReadOnlyAdmin):
    list_display = ("week_start", "model_permaslug", "dimension", "value", "sampled_tokens", "total_tokens")
    list_filter = ("dimension", "value")
    search_fields = ("model_permaslug",)


@admin.register(AggregatedDay)
class AggregatedDayAdmin(ReadOnlyAdmin):
    list_display = ("date", "aggregated_at", "generations")
    date_hierarchy = "date"


@admin.register(RateLimitCounter)
class RateLimitCounterAdmin(ReadOnlyAdmin):
    list_display = ("key", "window_start", "count")
    search_fields = ("key",)
