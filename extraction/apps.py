from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
    verbose_name = "Extracted memories"

    def ready(self) -> None:
        from conversations.services import messages_cleared
        from extraction import services

        # Memories derived from a conversation's messages go with them (their history by cascade).
        messages_cleared.connect(services.conversation_memories_erase, dispatch_uid="conversation_memories_erase")
