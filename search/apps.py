from django.apps import AppConfig


class SearchConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "search"

    def ready(self) -> None:
        from search import embeddings
        from search.models import MessageEmbedding
        from tenants import usage
        from tenants.models import setting_check_register

        setting_check_register("MEMORY_EMBEDDING_MODEL", embeddings.tenant_model_refusal)
        # A tenant's storage counts its messages' vectors.
        usage.storage_measure_register("embeddings", usage.row_bytes_per_day(MessageEmbedding, "created_at"))
