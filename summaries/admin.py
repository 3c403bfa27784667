"""The operators' admin for summaries: browse and read them, nothing else.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see that tenant's
summaries only. Summaries are derived from the messages by the service, so the admin never adds,
edits or deletes one (erasing the conversation erases its summaries).

A conversation's page lists its newest summaries in its "Derived" panels (``summaries_panel``).
Both show the messages a summary covers by their place in the conversation and their times
("messages 41–52 of 120"), never by seq.
"""

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from conversations import derived
from conversations.admin import transcript_url
from conversations.models import Conversation, Message
from summaries.models import Summary
from tenants.admin import TenantScopedAdmin

PREVIEW_CHARS = 90


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
        "covers",
        "token_count",
        "created_at",
        "text",
    )
    readonly_fields = fields

    @admin.display(description="Covers")
    def covers(self, summary: Summary) -> SafeString:
        """The messages the summary covers: their places in the conversation, their times, each
        linked to the transcript at that message."""
        conversation = summary.conversation
        places, total = derived.message_places(conversation, [summary.first_seq, summary.last_seq])
        first, last = places[summary.first_seq], places[summary.last_seq]

        def at(place: derived.Place, seq: int) -> SafeString:
            url = transcript_url(conversation_pk=conversation.pk, position=place.position, seq=seq)
            return format_html('<a href="{}">{}</a>', url, place.position)

        if first.position == last.position:
            return format_html("Message {} of {}, {}", at(first, summary.first_seq), total, derived.when_span(first, last))
        return format_html(
            "Messages {}–{} of {}, {}",
            at(first, summary.first_seq),
            at(last, summary.last_seq),
            total,
            derived.when_span(first, last),
        )

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


# --- The conversation page's panel -------------------------------------------------------------------


def summaries_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel:
    """The conversation's newest summaries: the messages each covers (their places and times), when
    it was made, its messages and tokens, a link to its page; when there is none, when one will be made."""
    tenant = conversation.tenant
    summaries = list(
        Summary.objects.for_tenant(tenant)
        .filter(conversation=conversation)
        .order_by("-created_at", "-id")[: derived.ROWS_SHOWN + 1]
    )
    if not summaries:
        every = tenant.setting("MEMORY_SUMMARY_EVERY")
        if every <= 0:
            text = "No summary: periodic summaries are off for this tenant (MEMORY_SUMMARY_EVERY=0)."
        else:
            pairs = Message.objects.for_tenant(tenant).filter(conversation=conversation, role="user", archived=False).count()
            text = (
                f"No summary yet: summaries are made after every {every} message pairs, a user message and its "
                f"answers (MEMORY_SUMMARY_EVERY={every}), over the last MEMORY_SUMMARY_WINDOW="
                f"{tenant.setting('MEMORY_SUMMARY_WINDOW')} messages; this conversation has "
                f"{derived.plural(pairs, 'pair')}."
            )
        return derived.Panel(title="Summaries", body=derived.empty(text), figure="0")

    places, total = derived.message_places(
        conversation, [seq for summary in summaries[: derived.ROWS_SHOWN] for seq in (summary.first_seq, summary.last_seq)]
    )

    def row(summary: Summary) -> SafeString:
        first, last = places[summary.first_seq], places[summary.last_seq]
        return derived.row(
            derived.link(
                derived.change_url(request, summary),
                derived.span(first, last, total).capitalize(),
                f"filed after {derived.plural(summary.pair_count, 'pair')}",
            ),
            format_html(
                "{} · made {} · {} · {} tok · {}",
                derived.when_span(first, last),
                derived.when(summary.created_at),
                derived.plural(summary.message_count, "message"),
                summary.token_count,
                summary.model,
            ),
            format_html(
                '<span title="{}">{}</span>', Truncator(summary.text).chars(500), Truncator(summary.text).chars(PREVIEW_CHARS)
            ),
        )

    return derived.listing(
        "Summaries",
        summaries,
        Summary.objects.for_tenant(tenant).filter(conversation=conversation),
        row,
        every_url=derived.changelist_url(request, Summary, conversation.tenant_id, conversation__id__exact=conversation.pk),
        noun=("summary", "summaries"),
        of="this conversation",
    )


derived.derived_panel_register("summaries", 10, summaries_panel)
