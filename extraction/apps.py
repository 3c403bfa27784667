from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
    verbose_name = "Extracted memories"

    def ready(self) -> None:
        from conversations.selectors import status_section_register
        from conversations.services import derived_task_wanted_register, messages_cleared
        from extraction import runs, selectors, services
        from extraction.models import ExtractionUsage, Memory, MemoryChange
        from tenants import usage

        # Memories derived from a conversation's messages go with them (their history by cascade).
        messages_cleared.connect(services.conversation_memories_erase, dispatch_uid="conversation_memories_erase")
        # A tenant's status says whether memories are extracted for it, and its usage of the day.
        status_section_register("extraction", selectors.tenant_extraction_status)
        # Writes are sent to the extraction for the tenants that extract only.
        derived_task_wanted_register("extraction.tasks.conversation_extract", runs.tenant_extracts)
        # A tenant's usage: the extractor's model tokens are read from its own daily count (never
        # copied, so counted once), and its memories and their history are part of the tenant's storage.
        usage.token_count_register("extraction", usage.daily_column(ExtractionUsage, "tokens"))
        usage.storage_measure_register("memories", usage.row_bytes_per_day(Memory, "created_at"))
        usage.storage_measure_register("memory_changes", usage.row_bytes_per_day(MemoryChange, "changed_at"))
