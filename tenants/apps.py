from django.apps import AppConfig


class TenantsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tenants"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from tenants import schema  # noqa: F401 - registers the OpenAPI security scheme
        from tenants.models import ProviderCredential, TenantApiKey
        from tenants.services import api_key_forget, provider_credential_forget

        # A deleted key (or every key of a deleted tenant, by cascade) must not live on in the auth
        # cache: however it was deleted (admin, shell, a tenant's cascade), its record goes too.
        post_delete.connect(api_key_forget, sender=TenantApiKey, dispatch_uid="tenants.api_key_forget")
        for signal in (post_save, post_delete):
            signal.connect(
                provider_credential_forget, sender=ProviderCredential, dispatch_uid=f"tenants.credential_forget.{signal}"
            )
