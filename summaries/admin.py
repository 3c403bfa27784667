"""The operators' admin for summaries: browse and read them, nothing else.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see that tenant's
summaries only. Summaries are derived from the messages by the service, so the admin never adds,
edits or deletes one (erasing the conversation erases its summaries).
"""

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from summaries.models import Summary
from tenants.admin import TenantScopedAdmin


@admin.register(Summary)
class SummaryAdmin(TenantScopedAdmin):
    list_display = ("conversation", "pair_count", "model", "message_count", "token_count", "created_at")
    list_filter = (("created_at", admin.DateFieldListFilter), "model")
    list_select_related = ("conversation",)
    list_per_page = 50
    ordering = ("-created_at", "-id")
    search_fields = ("conversation__conversation_id",)
    search_help_text = "The beginning of a conversation id."
    fields = (
        "tenant",
        "conversation",
        "pair_count",
        "model",
        "message_count",
        "first_seq",
        "last_seq",
        "token_count",
        "created_at",
        "text",
    )
    readonly_fields = fields

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(conversation__conversation_id__startswith=term), False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
