from django.apps import AppConfig


class SummariesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "summaries"

    def ready(self) -> None:
        from conversations.services import messages_cleared
        from summaries import services, summarizer
        from summaries.models import Summary
        from tenants import usage
        from tenants.models import setting_check_register

        messages_cleared.connect(services.conversation_summaries_erase, dispatch_uid="conversation_summaries_erase")
        setting_check_register("MEMORY_SUMMARY_MODEL", summarizer.tenant_model_refusal)
        # A tenant's storage counts its conversations' summaries.
        usage.storage_measure_register("summaries", usage.row_bytes_per_day(Summary, "created_at"))
