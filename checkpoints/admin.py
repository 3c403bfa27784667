"""The operators' admin for checkpoints: find one, read its state and writes, delete.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see that tenant's
checkpoints only. Checkpoints are written by agents through the API, so the admin never adds or
edits one; deleting is allowed to whoever holds the delete permission.

A conversation's page lists its newest checkpoints in its "Derived" panels (``checkpoints_panel``).
"""

import json
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.models import Checkpoint, CheckpointWrite
from conversations import derived
from conversations.models import Conversation
from tenants.admin import TenantScopedAdmin, shortened, staff_tenant


def _pretty_json(value: Any) -> str:
    return format_html('<pre class="memory-json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


class CheckpointWriteInline(admin.TabularInline):
    """The checkpoint's pending writes, read-only, in the order the API returns them."""

    model = CheckpointWrite
    fields = ("task_id", "task_path", "idx", "channel", "value_json")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The formset narrows this to the checkpoint shown, which the scoped admin already found.
        tenant = staff_tenant(request.user)
        if request.user.is_superuser:
            writes = CheckpointWrite.unscoped.all()  # superusers: every tenant
        elif tenant is not None:
            writes = CheckpointWrite.objects.for_tenant(tenant)
        else:
            writes = CheckpointWrite.unscoped.none()  # bound to no tenant: nothing
        return writes.order_by("task_path", "task_id", "idx")

    @admin.display(description="Value")
    def value_json(self, write: CheckpointWrite) -> str:
        return _pretty_json(write.value)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return True  # part of the checkpoint: whoever may view it sees its writes

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class CheckpointChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        return super().get_queryset(request, exclude_parameters).defer("state", "metadata")  # not shown in the list


@admin.register(Checkpoint)
class CheckpointAdmin(TenantScopedAdmin):
    list_display = ("conversation", "namespace", "checkpoint_id", "created_at")
    list_filter = (("created_at", admin.DateFieldListFilter), ("namespace", admin.EmptyFieldListFilter))
    list_select_related = ("conversation",)
    list_per_page = 50
    ordering = ("-id",)
    search_fields = ("checkpoint_id",)
    search_help_text = "The beginning of a conversation id, or a whole checkpoint id."
    fields = (
        "tenant",
        "conversation",
        "namespace",
        "checkpoint_id",
        "parent_id",
        "created_at",
        "updated_at",
        "state_json",
        "metadata_json",
    )
    readonly_fields = fields
    inlines = (CheckpointWriteInline,)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return CheckpointChangeList

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(Q(conversation__conversation_id__startswith=term) | Q(checkpoint_id=term)), False

    @admin.display(description="State")
    def state_json(self, checkpoint: Checkpoint) -> str:
        return _pretty_json(checkpoint.state)

    @admin.display(description="Metadata")
    def metadata_json(self, checkpoint: Checkpoint) -> str:
        return _pretty_json(checkpoint.metadata)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


# --- The conversation page's panel -------------------------------------------------------------------


def checkpoints_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel:
    """The conversation's newest checkpoints (its agent's graph state at each step, every namespace),
    each linking to its page with its state and writes."""
    tenant = conversation.tenant
    of_conversation = Checkpoint.objects.for_tenant(tenant).filter(conversation=conversation)
    checkpoints = list(
        of_conversation.only("id", "tenant_id", "checkpoint_id", "namespace", "parent_id", "created_at").order_by("-id")[
            : derived.ROWS_SHOWN + 1
        ]
    )
    keep = tenant.setting("MEMORY_MAX_CHECKPOINTS")
    if not checkpoints:
        return derived.Panel(
            title="Checkpoints",
            figure="0",
            body=derived.empty(
                "No checkpoint: an agent's LangGraph checkpointer saves them through the API "
                f"(POST /api/v1/conversations/{conversation.conversation_id}/checkpoints/); the newest "
                f"MEMORY_MAX_CHECKPOINTS={keep} of each namespace are kept."
            ),
        )

    def row(checkpoint: Checkpoint) -> SafeString:
        return derived.row(
            derived.link(derived.change_url(request, checkpoint), shortened(checkpoint.checkpoint_id, 40)),
            format_html(
                "{} · {}{}",
                format_html("namespace <code>{}</code>", checkpoint.namespace) if checkpoint.namespace else "root graph",
                derived.when(checkpoint.created_at),
                format_html(" · after {}", shortened(checkpoint.parent_id, 24)) if checkpoint.parent_id else "",
            ),
        )

    return derived.listing(
        "Checkpoints",
        checkpoints,
        of_conversation,
        row,
        every_url=derived.changelist_url(request, Checkpoint, conversation.tenant_id, conversation__id__exact=conversation.pk),
        noun=("checkpoint", "checkpoints"),
        of="this conversation",
        first_line=format_html("Newest first; the newest {} of each namespace are kept.", keep),
    )


derived.derived_panel_register("checkpoints", 50, checkpoints_panel)
