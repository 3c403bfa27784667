from django.apps import AppConfig


class SummariesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "summaries"

    def ready(self) -> None:
        from conversations.services import messages_cleared
        from summaries import services

        messages_cleared.connect(services.conversation_summaries_erase, dispatch_uid="conversation_summaries_erase")
