from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self) -> None:
        from conversations.models import Conversation, Message
        from tenants import usage

        # A tenant's usage: the messages stored each day (the (tenant, persisted_at) index bounds the
        # count to the day's rows), and the size of its messages and memory documents.
        usage.message_count_register("messages", usage.rows_per_day(Message, "persisted_at"))
        usage.storage_measure_register("messages", usage.row_bytes_per_day(Message, "persisted_at"))
        usage.storage_measure_register("conversations", usage.row_bytes_per_day(Conversation, "created_at"))
