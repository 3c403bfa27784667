"""The operators' view of message vectors: which messages are embedded, under which model.

Read-only and tenant-scoped like every admin here; vectors themselves are bytes and not shown.
Missing vectors are computed by ``manage.py reembed --tenant <slug>`` (or the hourly backfill).
"""

from typing import Any

from django.contrib import admin
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest

from search.models import MessageEmbedding
from tenants.admin import TenantScopedAdmin


@admin.register(MessageEmbedding)
class MessageEmbeddingAdmin(TenantScopedAdmin):
    list_display = ("conversation", "seq", "model", "dimensions", "created_at")
    list_filter = ("model", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("conversation",)
    list_per_page = 100
    ordering = ("-id",)
    search_fields = ("conversation__conversation_id",)
    search_help_text = "The beginning of a conversation id."
    fields = ("tenant", "conversation", "message", "seq", "model", "dimensions", "created_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("vector")

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        return (queryset.filter(Q(conversation__conversation_id__startswith=term)), False) if term else (queryset, False)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None, *args: Any) -> bool:
        return False
