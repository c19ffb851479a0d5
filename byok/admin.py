"""Django admin of BYOK credentials. The raw key is write-only here too: a password field that is never
rendered back; the ciphertext is not shown either."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from byok import services
from byok.models import ProviderCredential
from byok.serializers import ProviderCredentialUpdateSerializer
from gateway_project.api.errors import GatewayError
from inference.models import Provider


class ProviderCredentialForm(forms.ModelForm):
    new_key = forms.CharField(
        label="Provider key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Required when adding. When changing: leave empty to keep the stored key, or enter a new key "
        "to rotate it in place.",
    )

    class Meta:
        model = ProviderCredential
        fields = (
            "organization",
            "workspace",
            "provider",
            "name",
            "disabled",
            "is_fallback",
            "sort_order",
            "allowed_api_key_hashes",
            "allowed_models",
            "allowed_user_ids",
        )

    def clean_provider(self):
        provider = self.cleaned_data["provider"]
        if not Provider.objects.filter(slug=provider).exists():
            raise forms.ValidationError("Unknown provider (not in the catalog).")
        return provider

    def clean(self):
        cleaned = super().clean()
        if self.instance._state.adding and not cleaned.get("new_key"):
            self.add_error("new_key", "Enter the provider key.")
        workspace, organization = cleaned.get("workspace"), cleaned.get("organization")
        if workspace is not None and organization is not None and workspace.organization_id != organization.id:
            self.add_error("workspace", "The workspace belongs to another organization.")
        self._clean_restrictions(cleaned, organization)
        return cleaned

    def _clean_restrictions(self, cleaned: dict, organization) -> None:
        """The allow-lists follow the API's rules (shape, limits, key hashes of the organization)."""
        present = {f: cleaned[f] for f in services.RESTRICTION_FIELDS if f in cleaned}
        serializer = ProviderCredentialUpdateSerializer(data=present, partial=True)
        if not serializer.is_valid():
            for field, errors in serializer.errors.items():
                self.add_error(field, [str(e) for e in (errors if isinstance(errors, list) else [errors])])
            return
        cleaned.update(serializer.validated_data)
        if organization is not None:
            try:
                services.check_key_hashes(organization.id, cleaned.get("allowed_api_key_hashes"))
            except GatewayError as error:
                self.add_error("allowed_api_key_hashes", error.message)


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(admin.ModelAdmin):
    form = ProviderCredentialForm
    list_display = ("provider", "name", "label", "organization", "workspace", "disabled", "is_fallback", "sort_order")
    list_filter = ("provider", "disabled", "is_fallback", "organization")
    search_fields = ("name", "provider", "label", "id")
    readonly_fields = ("id", "label", "created_at", "updated_at")
    ordering = ("organization", "provider", "is_fallback", "sort_order")

    def save_model(self, request, obj, form, change):
        raw_key = form.cleaned_data.get("new_key")
        if raw_key:
            services.set_provider_key(obj, raw_key)
        super().save_model(request, obj, form, change)

    def delete_model(self, request, obj):
        services.provider_credential_delete(credential=obj)

    def delete_queryset(self, request, queryset):
        for credential in queryset:
            services.provider_credential_delete(credential=credential)
