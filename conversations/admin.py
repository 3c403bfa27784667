"""Operators' admin (minimal here): conversations, messages read-only, dead letters with replay."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from conversations import services
from conversations.exceptions import ServiceUnavailable
from conversations.models import Conversation, DeadLetter, Message


class UnscopedAdmin(admin.ModelAdmin):
    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The admin reads across tenants on purpose (superusers); tenant staff scoping comes with the admin work.
        return self.model.unscoped.get_queryset()


@admin.register(Conversation)
class ConversationAdmin(UnscopedAdmin):
    list_display = ("conversation_id", "tenant", "user_id", "agent_id", "message_count", "archived", "updated_at")
    list_filter = ("tenant", "archived")
    search_fields = ("conversation_id", "user_id", "agent_id")
    readonly_fields = ("last_seq", "message_count", "token_count", "memory_revision", "created_at", "updated_at")
    actions = ("rebuild_cache",)

    @admin.action(description="Rebuild the cache of the selected conversations")
    def rebuild_cache(self, request: HttpRequest, queryset: QuerySet) -> None:
        for conversation in queryset.select_related("tenant"):
            services.cache_rebuild(tenant=conversation.tenant, conversation_id=conversation.conversation_id, allow_empty=True)
            services.memory_cache_rebuild(tenant=conversation.tenant, conversation=conversation)
        self.message_user(request, f"Rebuilt the cache of {queryset.count()} conversations.")


@admin.register(Message)
class MessageAdmin(UnscopedAdmin):
    list_display = ("message_id", "conversation", "seq", "role", "created_at", "persisted_at")
    list_filter = ("role",)
    search_fields = ("message_id", "conversation__conversation_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(DeadLetter)
class DeadLetterAdmin(UnscopedAdmin):
    list_display = ("id", "task_name", "tenant", "attempts", "created_at", "replayed_at")
    list_filter = ("task_name", "replayed_at")
    readonly_fields = ("tenant", "task_name", "payload", "error", "attempts", "created_at", "replayed_at")
    actions = ("replay",)

    @admin.action(description="Replay the selected dead letters")
    def replay(self, request: HttpRequest, queryset: QuerySet) -> None:
        replayed = 0
        for dead_letter in queryset:
            try:
                services.dead_letter_replay(dead_letter=dead_letter)
                replayed += 1
            except ServiceUnavailable as error:
                self.message_user(request, error.message, level=messages.ERROR)
                break
        self.message_user(request, f"Replayed {replayed} dead letters.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
