from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
    verbose_name = "Extracted memories"

    def ready(self) -> None:
        from conversations.selectors import status_section_register
        from conversations.services import derived_task_wanted_register, messages_cleared
        from extraction import runs, selectors, services

        # Memories derived from a conversation's messages go with them (their history by cascade).
        messages_cleared.connect(services.conversation_memories_erase, dispatch_uid="conversation_memories_erase")
        # A tenant's status says whether memories are extracted for it, and its usage of the day.
        status_section_register("extraction", selectors.tenant_extraction_status)
        # Writes are sent to the extraction for the tenants that extract only.
        derived_task_wanted_register("extraction.tasks.conversation_extract", runs.tenant_extracts)
