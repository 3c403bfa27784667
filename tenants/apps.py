from django.apps import AppConfig


class TenantsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tenants"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from tenants import chat_models, egress, schema  # noqa: F401 - schema registers the OpenAPI security scheme
        from tenants.models import ProviderCredential, Tenant, TenantApiKey, setting_check_register
        from tenants.services import api_key_forget, provider_credential_forget, tenant_forget

        # A key saved (revoked, expired, moved) or deleted (or every key of a deleted tenant, by
        # cascade) must not live on in the auth cache: however it was changed (admin, shell, a model
        # save), its record goes too. Changes that send no signal (a queryset update, raw SQL) are
        # bounded by MEMORY_AUTH_REVALIDATE instead (tenants/authentication.py).
        for signal in (post_save, post_delete):
            signal.connect(api_key_forget, sender=TenantApiKey, dispatch_uid=f"tenants.api_key_forget.{signal}")
        post_save.connect(tenant_forget, sender=Tenant, dispatch_uid="tenants.tenant_forget")
        for signal in (post_save, post_delete):
            signal.connect(
                provider_credential_forget, sender=ProviderCredential, dispatch_uid=f"tenants.credential_forget.{signal}"
            )
        # An allowlist entry that would silently match nothing stops every process at start.
        egress.allowlist_check()
        # A tenant's own chat model and server are checked when its settings are saved.
        setting_check_register("MEMORY_CHAT_MODEL", chat_models.tenant_choice_refusal(chat_models.parse_spec))
        setting_check_register("MEMORY_CHAT_BASE_URL", chat_models.tenant_choice_refusal(chat_models.validate_base_url))
        setting_check_register("MEMORY_EXTRACTION_MODEL", chat_models.tenant_choice_refusal(chat_models.model_name_check))
