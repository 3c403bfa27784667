from django.apps import AppConfig


class SearchConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "search"

    def ready(self) -> None:
        from search import embeddings, remote, rerank
        from search.models import MessageEmbedding
        from tenants import chat_models, usage
        from tenants.models import setting_check_register

        setting_check_register("MEMORY_EMBEDDING_MODEL", embeddings.tenant_model_refusal)
        # A tenant's own embedding server passes the egress policy when its settings are saved.
        setting_check_register("MEMORY_EMBEDDING_BASE_URL", remote.base_url_refusal)
        # A tenant's own reranker: a URL the egress policy lets it reach, in a format the service speaks.
        setting_check_register("MEMORY_RERANK_URL", rerank.url_refusal)
        setting_check_register("MEMORY_RERANK_API", rerank.api_refusal)
        setting_check_register("MEMORY_RERANK_MODEL", chat_models.tenant_choice_refusal(chat_models.model_name_check))
        # A tenant's storage counts its messages' vectors.
        usage.storage_measure_register("embeddings", usage.row_bytes_per_day(MessageEmbedding, "created_at"))
