from django.apps import AppConfig


class SearchConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "search"

    def ready(self) -> None:
        from search import embeddings
        from tenants.models import setting_check_register

        setting_check_register("MEMORY_EMBEDDING_MODEL", embeddings.tenant_model_refusal)
