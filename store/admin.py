"""The operators' admin for LangGraph store items: browse a tenant's items, edit a value, delete.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see that tenant's
items only. Items are created by agents through the API, so the admin never adds one. Editing the
value and the TTL goes through ``services.store_batch`` as a put, so the searchable text and its
vector follow the new value (indexed as the item was put: not at all, the whole value, or the same
field paths) and the value passes the same rules as through the API. Deleting goes through it too.
"""

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.text import Truncator

from core.exceptions import MemoryServiceError
from core.forms import StorableModelForm
from store import services
from store.models import StoreItem
from tenants.admin import TenantScopedAdmin

PREVIEW_CHARS = 80


class StoreItemForm(StorableModelForm):
    class Meta:
        model = StoreItem
        fields = ("value", "ttl_minutes")

    def clean_value(self) -> dict[str, Any]:
        value = self.cleaned_data.get("value")
        if value is None:
            raise forms.ValidationError("A value is required: delete the item to remove it.")
        try:
            return services.check_value(value, field="value")
        except MemoryServiceError as error:
            raise forms.ValidationError(error.message) from None

    def clean_ttl_minutes(self) -> float | None:
        ttl = self.cleaned_data.get("ttl_minutes")
        if ttl is not None and not 0 < ttl <= services.MAX_TTL_MINUTES:
            raise forms.ValidationError(f"Minutes to live: above 0 and at most {services.MAX_TTL_MINUTES}, or empty.")
        return ttl


@admin.register(StoreItem)
class StoreItemAdmin(TenantScopedAdmin):
    form = StoreItemForm
    list_display = ("namespace_path", "key", "value_preview", "updated_at", "expires_at")
    list_filter = (("updated_at", admin.DateFieldListFilter), ("expires_at", admin.EmptyFieldListFilter))
    list_per_page = 50
    ordering = ("namespace", "key")
    search_fields = ("key", "indexed_text")
    search_help_text = "Part of a key or of the item's searchable text."
    fields = (
        "tenant",
        "namespace_path",
        "key",
        "value",
        "ttl_minutes",
        "expires_at",
        "created_at",
        "updated_at",
        "searchable_text",
        "index_paths",
        "embedding_model",
    )
    readonly_fields = (
        "tenant",
        "namespace_path",
        "key",
        "expires_at",
        "created_at",
        "updated_at",
        "searchable_text",
        "index_paths",
        "embedding_model",
    )

    @admin.display(description="Namespace", ordering="namespace")
    def namespace_path(self, item: StoreItem) -> str:
        return " / ".join(item.namespace)

    @admin.display(description="Value")
    def value_preview(self, item: StoreItem) -> str:
        return Truncator(json.dumps(item.value, ensure_ascii=False)).chars(PREVIEW_CHARS)

    @admin.display(description="Searchable text")
    def searchable_text(self, item: StoreItem) -> str:
        return format_html('<pre class="memory-json">{}</pre>', item.indexed_text or "(not indexed)")

    def save_model(self, request: HttpRequest, obj: StoreItem, form: forms.ModelForm, change: bool) -> None:
        put = services.PutOperation(
            namespace=tuple(obj.namespace),
            key=obj.key,
            value=obj.value,
            index=obj.index_paths if obj.indexed else False,
            ttl=obj.ttl_minutes,
        )
        services.store_batch(tenant=obj.tenant, operations=[put])

    def delete_model(self, request: HttpRequest, obj: StoreItem) -> None:
        delete = services.PutOperation(namespace=tuple(obj.namespace), key=obj.key, value=None)
        services.store_batch(tenant=obj.tenant, operations=[delete])

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for item in queryset.select_related("tenant"):
            self.delete_model(request, item)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
