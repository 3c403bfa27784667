"""The operators' view of message vectors: which messages are embedded, under which model.

Read-only and tenant-scoped like every admin here; vectors themselves are bytes and not shown.
Missing vectors are computed by ``manage.py reembed --tenant <slug>`` (or the hourly backfill).

A conversation's page shows its search coverage in its "Derived" panels (``search_panel``): how many of
its messages have a vector under the tenant's model, and how many wait for one.
"""

from typing import Any

from django.contrib import admin
from django.db.models import Count, Model, OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from conversations import derived
from conversations.models import Conversation, Message
from search import coverage
from search.filters import SEARCHED_ROLES
from search.models import MessageEmbedding
from tenants.admin import TenantScopedAdmin, badge


@admin.register(MessageEmbedding)
class MessageEmbeddingAdmin(TenantScopedAdmin):
    list_display = ("conversation", "place", "said_at", "model", "dimensions", "created_at")
    list_filter = ("model", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("conversation",)
    list_per_page = 100
    ordering = ("-id",)
    search_fields = ("conversation__conversation_id",)
    search_help_text = "The beginning of a conversation id."
    fields = ("tenant", "conversation", "message", "place", "said_at", "model", "dimensions", "created_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Its message by its place in the conversation and when it was said, as a person reads a transcript
        # (never the seq): one indexed count and one lookup per row shown. The rows are the vector's own
        # tenant's (OuterRef), whichever manager reads them.
        same_conversation = {"tenant_id": OuterRef("tenant_id"), "conversation_id": OuterRef("conversation_id")}
        before = Message.unscoped.filter(**same_conversation, seq__lte=OuterRef("seq"))  # scoped by the row's tenant (OuterRef)
        said = Message.unscoped.filter(tenant_id=OuterRef("tenant_id"), pk=OuterRef("message_id"))  # the same
        return (
            super()
            .get_queryset(request)
            .defer("vector")
            .annotate(
                position=Subquery(before.order_by().values("conversation_id").annotate(n=Count("pk")).values("n")[:1]),
                message_said_at=Subquery(said.values("created_at")[:1]),
            )
        )

    @admin.display(description="Message")
    def place(self, embedding: MessageEmbedding) -> str:
        position = getattr(embedding, "position", None)
        return f"message {position}" if position else "no longer stored"

    @admin.display(description="Said at", ordering="message_said_at")
    def said_at(self, embedding: MessageEmbedding) -> SafeString:
        return derived.when(getattr(embedding, "message_said_at", None))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        return (queryset.filter(Q(conversation__conversation_id__startswith=term)), False) if term else (queryset, False)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None, *args: Any) -> bool:
        return False


# --- The conversation page's panel -------------------------------------------------------------------


def search_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel:
    """How much of the conversation search covers (``search.coverage``): its messages embedded under the
    tenant's model against those the embedder embeds and all it holds, those waiting for a vector, the
    writes not persisted yet, and a link to its vectors."""
    tenant = conversation.tenant
    covered = coverage.conversation_coverage(tenant=tenant, conversation=conversation)
    vectors = derived.changelist_url(request, MessageEmbedding, conversation.tenant_id, conversation__id__exact=conversation.pk)
    roles = " and ".join(sorted(SEARCHED_ROLES))
    if covered.embedding_model is None:
        return derived.Panel(
            title="Search coverage",
            figure="words only",
            body=derived.empty(
                "Embeddings are off for this tenant (MEMORY_EMBEDDING_MODEL is empty): search matches the words "
                f"of its {derived.plural(covered.messages, 'message')}, and no message waits for a vector."
            ),
        )
    if covered.messages == 0:
        lines = [
            derived.empty(
                f"No message to embed yet: {roles} messages with text are embedded under {covered.embedding_model} "
                "by the derived worker once persisted."
            )
        ]
    else:
        waiting = (
            format_html(
                "{}, the oldest persisted {}: the derived worker embeds them, or "
                "<code>manage.py reembed --tenant {} --conversation {}</code>.",
                badge("pending", f"{covered.not_embedded} waiting", "persisted messages without a vector yet"),
                derived.when(covered.oldest_not_embedded_at),
                tenant.slug,
                conversation.conversation_id,
            )
            if covered.not_embedded
            else format_html("{} Every message to search has its vector.", badge("warm", "none waiting"))
        )
        lines = [
            derived.lead(
                format_html(
                    "<strong>{}</strong> of the {} {} messages with text are embedded under <code>{}</code> ({} in all).",
                    covered.embedded,
                    covered.messages,
                    roles,
                    covered.embedding_model,
                    derived.plural(conversation.message_count, "message"),
                )
            ),
            format_html('<p class="memory-derived__text">{}</p>', waiting),
        ]
    if covered.pending_persist is None:
        persisting = badge("unknown", "Redis unreachable") + format_html(" {}", "writes not persisted yet are unknown.")
    elif covered.pending_persist:
        persisting = format_html(
            "{} acknowledged, not persisted yet (embedded after).",
            derived.plural(covered.pending_persist, "write"),
        )
    else:
        persisting = format_html("{}", "Every acknowledged write is persisted.")
    facts = format_html('<ul class="memory-derived__facts">{}</ul>', format_html_join("", "<li>{}</li>", [(persisting,)]))
    return derived.Panel(
        title="Search coverage",
        figure=f"{covered.embedded}/{covered.messages}",
        body=derived.join(*lines, facts, derived.more(vectors, "The vectors of this conversation") if vectors else ""),
    )


derived.derived_panel_register("search", 40, search_panel)
