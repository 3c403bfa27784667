"""The operators' admin for extracted memories: find a user's memories, read where each came from and
how it changed, correct one, take one back; and the extractor's daily usage.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see and act on that
tenant's memories only, and another tenant's memory by URL is a 404.

- **Correcting** goes through ``services.memory_correct`` as ``admin:<username>``, never a plain
  save: the version replaced stays in the history, and the service's checks are the form's. The form
  makes the correction as its last check (``MemoryCorrectionForm``), so a refusal is shown on the form
  with nothing written, and the admin log entry commits with the correction (the admin's change form
  runs in one transaction).
- **Deleting** (the delete page and the "invalidate" action that replaces the stock delete action)
  takes a memory back through ``services.memory_invalidate``: it is no longer current and is kept,
  with its history. No admin page erases a memory: erasing a user or a conversation through the API
  does, with everything read from them.
- **Adding** is not offered: memories are what an extractor read from a conversation.

A memory's page links each message it was read from to its conversation's transcript, at the page
and the message (``#seq-<n>``); the messages are found in one query, however many there are.

A conversation's page lists, when extraction is on for its tenant, the memories read from it with
their sources in its "Derived" panels (``memories_panel``); off, the panel is not shown.
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Substr
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from conversations import derived
from conversations.admin import transcript_url
from conversations.models import Conversation, Message
from core.exceptions import MemoryServiceError
from core.forms import StorableModelForm
from extraction import services
from extraction.models import ExtractionUsage, ExtractionWatermark, Memory, MemoryChange
from tenants.admin import TenantScopedAdmin, badge

PREVIEW_CHARS = 80
MESSAGE_PREVIEW_CHARS = 120
# The newest changes a memory's page shows; a memory merged again and again has many.
HISTORY_ON_PAGE = 100
# The memories one confirmation of the "invalidate" action lists and takes back.
INVALIDATE_LIMIT = 1000
# What the delete page and the "invalidate" action confirm: the stock pages with words that say what
# happens (nothing is erased).
INVALIDATE_ONE = "admin/extraction/memory/invalidate_confirmation.html"
INVALIDATE_SELECTED = "admin/extraction/memory/invalidate_selected_confirmation.html"


def _preview(text: str | None, chars: int = PREVIEW_CHARS) -> str:
    return "" if text is None else Truncator(text).chars(chars)


def _moment(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _actor(request: HttpRequest) -> str:
    """The model a change made in the admin is recorded with."""
    return f"admin:{request.user.get_username()}"


# --- The messages a memory was read from ----------------------------------------------------------


@dataclass(frozen=True)
class SourceMessage:
    """A message a memory was read from, as its conversation's transcript shows it."""

    message_id: uuid.UUID
    conversation_id: str
    seq: int
    position: int  # its place among the conversation's stored messages, oldest first: what a person reads
    role: str
    created_at: datetime
    preview: str
    url: str  # the conversation's page, at the transcript page that holds the message, anchored at it


def _source_messages(memory: Memory) -> dict[uuid.UUID, list[SourceMessage]]:
    """The messages of ``memory.message_ids`` still stored, by id, read once per memory and kept on it.

    A message id is unique within its conversation only, so an id is looked up within the memory's
    conversations (``conversation_pks``: its sources' and its changes' alike), and may name one message
    in each. The transcript pages by position among the conversation's persisted messages, oldest
    first; each message's position is counted in the same query.
    """
    found = getattr(memory, "_source_messages", None)
    if found is None:
        _source_messages_read([memory])
        found = memory._source_messages
    return found


def _source_messages_read(memories: list[Memory]) -> None:
    """Read the source messages of ``memories`` (of one tenant) in one query, kept on each memory."""
    wanted = [memory for memory in memories if getattr(memory, "_source_messages", None) is None]
    if not wanted:
        return
    # The memories were found through the scoped queryset: their messages are read within their tenant.
    messages_of_tenant = Message.objects.for_tenant(wanted[0].tenant_id)
    position = (
        messages_of_tenant.filter(conversation=OuterRef("conversation"), seq__lte=OuterRef("seq"))
        .order_by()
        .values("conversation")
        .annotate(count=Count("pk"))
        .values("count")
    )
    conversation_pks = {pk for memory in wanted for pk in memory.conversation_pks}
    message_ids = {message_id for memory in wanted for message_id in memory.message_ids}
    rows = (
        messages_of_tenant.filter(conversation__in=conversation_pks, message_id__in=message_ids)
        .annotate(position=Subquery(position), preview=Substr("content", 1, MESSAGE_PREVIEW_CHARS + 1))
        .order_by("conversation", "seq")
        .values_list(
            "message_id", "conversation", "conversation__conversation_id", "seq", "role", "created_at", "preview", "position"
        )
        if conversation_pks and message_ids
        else []
    )
    stored = []
    for message_id, conversation_pk, conversation_id, seq, role, created_at, preview, position in rows:
        url = transcript_url(conversation_pk=conversation_pk, position=position, seq=seq)
        message = SourceMessage(
            message_id, conversation_id, seq, position, role, created_at, _preview(preview, MESSAGE_PREVIEW_CHARS), url
        )
        stored.append((conversation_pk, message))
    for memory in wanted:
        own_conversations, own_ids = set(memory.conversation_pks), set(memory.message_ids)
        found: dict[uuid.UUID, list[SourceMessage]] = {}
        for conversation_pk, message in stored:
            if conversation_pk in own_conversations and message.message_id in own_ids:
                found.setdefault(message.message_id, []).append(message)
        memory._source_messages = found


def _message_links(memory: Memory, message_ids: Iterable[uuid.UUID]) -> str:
    """Short links to ``message_ids`` ("c1, message 3"); an id no longer stored is shown as such."""
    found = _source_messages(memory)
    links = []
    for message_id in message_ids:
        stored = found.get(message_id)
        if not stored:
            links.append(format_html('<code title="no longer stored">{}</code>', message_id))
        for message in stored or []:
            links.append(
                format_html(
                    '<a href="{}" class="memory-source" title="{}">{}, message {}</a>',
                    message.url,
                    message.preview,
                    message.conversation_id,
                    message.position,
                )
            )
    return format_html_join(", ", "{}", ((link,) for link in links))


# --- Memories ----------------------------------------------------------------------------------------


class CurrentFilter(admin.SimpleListFilter):
    title = "current"
    parameter_name = "current"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "Current"), ("no", "Taken back (valid to set)"), ("past", "Past versions (replaced by an update)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(valid_to__isnull=True)
        if self.value() == "no":
            return queryset.filter(valid_to__isnull=False, version_of__isnull=True)
        if self.value() == "past":
            return queryset.filter(version_of__isnull=False)
        return queryset


class MemoryChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        # The sources are not shown in the list and grow with every merge.
        return super().get_queryset(request, exclude_parameters).defer("message_ids", "conversation_pks")


class MemoryCorrectionForm(StorableModelForm):
    """An operator's correction of one memory, made by ``services.memory_correct`` as ``by``.

    The fields are the service's ``CORRECTABLE``. Once the form's own checks pass, the changed fields
    go to the service, which checks them as it checks a model's and writes the new version with the
    old one kept as history, or refuses and writes nothing: its refusal is this form's error, on the
    field it names. The form saves nothing itself; ``save(commit=False)`` hands back the corrected
    memory.
    """

    by = ""  # the model the correction is recorded with: set per request (MemoryAdmin.get_form)

    class Meta:
        model = Memory
        fields = services.CORRECTABLE
        help_texts = {
            "valid_from": "When the statement began to hold.",
            "valid_to": "When it stopped holding: set it to take the memory back, clear it to make the memory current again.",
            "confidence": "From 0 to 1.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("valid_from", "valid_to"):
            if self.initial.get(name) is not None:
                # The page shows times to the second: a time left as shown is not a change.
                self.initial[name] = self.initial[name].replace(microsecond=0)
        # A correction sets valid_from but cannot clear it.
        self.fields["valid_from"].required = self.instance.valid_from is not None

    def _post_clean(self) -> None:
        super()._post_clean()  # the model's own checks
        if self.errors:
            return
        changes = {name: _wire(self.cleaned_data[name]) for name in self.changed_data}
        if not changes:
            return
        memory = self.instance
        try:
            self.instance = services.memory_correct(
                tenant=memory.tenant, user_id=memory.user_id, memory_id=memory.memory_id, changes=changes, by=self.by
            )
        except (services.InvalidCorrection, services.MemoryNotFound) as refused:  # refused before anything was written
            named = _field_named(refused)
            self.add_error(named if named in self.fields else None, refused.message)


def _wire(value: Any) -> Any:
    """A form value as the service reads it: times as ISO 8601 with their offset."""
    return value.isoformat() if isinstance(value, datetime) else value


def _field_named(error: MemoryServiceError) -> str:
    """The field a refusal names: its ``field`` detail, else the first word of its message
    ("confidence is 1.5; ..."), without a prefix such as ``memory.``."""
    named = error.details.get("field") or error.message.split(" ", 1)[0]
    return str(named).rstrip(".:;,").rsplit(".", 1)[-1]


@admin.register(Memory)
class MemoryAdmin(TenantScopedAdmin):
    form = MemoryCorrectionForm
    list_display = (
        "user_id",
        "subject",
        "kind",
        "text_preview",
        "current",
        "valid_from",
        "valid_to",
        "confidence_shown",
        "model",
        "updated_at",
        "tenant",
    )
    list_display_links = ("user_id", "subject")
    list_filter = ("kind", CurrentFilter, "model")
    list_select_related = ("tenant",)
    list_per_page = 50
    show_full_result_count = False
    ordering = ("-updated_at",)
    search_fields = ("user_id__exact", "subject", "text")
    search_help_text = "A user id (exactly), or words of a subject or a memory's text (each word must match one of them)."
    fieldsets = (
        (None, {"fields": ("tenant", "user_id", "memory_id", "current")}),
        ("Statement", {"fields": services.CORRECTABLE}),
        ("Provenance", {"fields": ("model", "embedding_model", "created_at", "updated_at", "sources")}),
        ("History", {"fields": ("versions", "history")}),
    )
    readonly_fields = (
        "tenant",
        "user_id",
        "memory_id",
        "current",
        "model",
        "embedding_model",
        "created_at",
        "updated_at",
        "sources",
        "versions",
        "history",
    )
    actions = ("invalidate",)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return MemoryChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The vector is never shown, and is the widest column of the row.
        return super().get_queryset(request).select_related("tenant").defer("embedding")

    def get_list_display(self, request: HttpRequest) -> tuple:
        if request.user.is_superuser:
            return self.list_display
        return tuple(column for column in self.list_display if column != "tenant")  # an operator has one tenant

    def get_form(self, request: HttpRequest, obj: Memory | None = None, change: bool = False, **kwargs: Any) -> type[ModelForm]:
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"by": _actor(request)})

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are read from conversations by an extractor

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # it would erase the rows: "invalidate" takes its place
        return actions

    # --- Columns and fields

    @admin.display(description="Versions")
    def versions(self, memory: Memory) -> str:
        """What held before an update (each a memory of its own), or the memory a past version is of."""
        if memory.version_of_id is not None:
            head = memory.version_of
            return format_html(
                'A past version of <a href="{}">{}</a>, replaced when it stopped holding.',
                reverse("admin:extraction_memory_change", args=[head.pk]),
                _preview(head.text),
            )
        past = list(
            Memory.objects.for_tenant(memory.tenant_id)
            .filter(version_of=memory)
            .order_by("-valid_to", "-pk")
            .only("pk", "text", "valid_from", "valid_to")
        )
        if not past:
            return "No update replaced it."
        rows = [
            format_html(
                '<li><a href="{}">{}</a> ({} to {})</li>',
                reverse("admin:extraction_memory_change", args=[version.pk]),
                _preview(version.text),
                _moment(version.valid_from),
                _moment(version.valid_to),
            )
            for version in past
        ]
        return format_html('<ol class="memory-versions">{}</ol>', format_html_join("", "{}", ((row,) for row in rows)))

    @admin.display(description="Text")
    def text_preview(self, memory: Memory) -> str:
        return _preview(memory.text)

    @admin.display(description="Current", boolean=True, ordering="valid_to")
    def current(self, memory: Memory) -> bool:
        return memory.current

    @admin.display(description="Confidence", ordering="confidence")
    def confidence_shown(self, memory: Memory) -> str:
        return f"{memory.confidence:.2f}"

    @admin.display(description="Read from")
    def sources(self, memory: Memory) -> str:
        found = _source_messages(memory)
        rows = []
        for message_id in memory.message_ids:
            stored = found.get(message_id)
            if not stored:
                rows.append(format_html("<li><code>{}</code> (no longer stored)</li>", message_id))
            for message in stored or []:
                rows.append(
                    format_html(
                        '<li><a href="{}" class="memory-source">{}, message {}</a> {}, {}: {}</li>',
                        message.url,
                        message.conversation_id,
                        message.position,
                        message.role,
                        _moment(message.created_at),
                        message.preview,
                    )
                )
        if not rows:
            return "No messages."
        return format_html('<ol class="memory-sources">{}</ol>', format_html_join("", "{}", ((row,) for row in rows)))

    @admin.display(description="History (newest first)")
    def history(self, memory: Memory) -> str:
        # The memory was found through the scoped queryset: its history is read within its tenant.
        changes = list(
            MemoryChange.objects.for_tenant(memory.tenant_id)
            .filter(memory=memory)
            .order_by("-changed_at", "-pk")[: HISTORY_ON_PAGE + 1]
        )
        shown = changes[:HISTORY_ON_PAGE]
        rows = (
            (
                change.action,  # the row's class
                change.action,
                _moment(change.changed_at),
                change.text,
                "—" if change.previous_text is None else change.previous_text,
                _moment(change.valid_from),
                _moment(change.valid_to),
                f"{change.confidence:.2f}",
                change.model,
                _message_links(memory, change.message_ids),
            )
            for change in shown
        )
        more = ""
        if len(changes) > HISTORY_ON_PAGE:
            total = MemoryChange.objects.for_tenant(memory.tenant_id).filter(memory=memory).count()
            more = format_html("<p>The {} newest of {} changes.</p>", HISTORY_ON_PAGE, total)
        return format_html(
            '<table class="memory-history"><thead><tr><th>Action</th><th>Changed</th><th>Text</th><th>Previous text</th>'
            "<th>Valid from</th><th>Valid to</th><th>Confidence</th><th>Model</th><th>Read from</th></tr></thead>"
            "<tbody>{}</tbody></table>{}",
            format_html_join("", '<tr class="memory-change memory-change--{}">' + "<td>{}</td>" * 9 + "</tr>", rows),
            more,
        )

    # --- Correcting

    def save_model(self, request: HttpRequest, obj: Memory, form: MemoryCorrectionForm, change: bool) -> None:
        """Nothing to save: the form made the correction through the service (``MemoryCorrectionForm``)."""

    # --- Deleting: taking back, never erasing

    def get_deleted_objects(self, objs: Iterable[Memory], request: HttpRequest) -> tuple[list[str], dict, set, list]:
        """What the delete page says happens: each memory taken back, nothing erased."""
        return [f"{memory}: no longer current, kept with its history" for memory in objs], {}, set(), []

    def log_deletions(self, request: HttpRequest, queryset: Iterable[Memory]) -> None:
        """Nothing is deleted: an invalidation is logged as a change once made (``_invalidate``)."""

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        self._invalidate(request, [obj])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._invalidate(request, list(queryset.select_related("tenant")))

    def render_delete_form(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        context.update(title="Invalidate this memory?", by=_actor(request), media=self.media)
        return TemplateResponse(request, INVALIDATE_ONE, context)

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:extraction_memory_change", args=[obj_id]))  # it is still there

    @admin.action(description="Invalidate the selected memories (kept, with their history)…", permissions=("delete",))
    def invalidate(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        memories = list(queryset.select_related("tenant")[:INVALIDATE_LIMIT])
        if request.POST.get("post") == "yes":
            self._invalidate(request, memories)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Invalidate memories?",
            "opts": self.opts,
            "media": self.media,
            "memories": memories,
            "current": [memory for memory in memories if memory.current],
            "by": _actor(request),
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, INVALIDATE_SELECTED, context)

    def _invalidate(self, request: HttpRequest, memories: list[Memory]) -> None:
        """Take back each current memory of ``memories`` through the service; one already taken back
        keeps the time it stopped holding."""
        invalidated, already = [], 0
        for memory in memories:
            if not memory.current:
                already += 1
                continue
            try:
                services.memory_invalidate(
                    tenant=memory.tenant, user_id=memory.user_id, memory_id=memory.memory_id, by=_actor(request)
                )
            except services.MemoryNotFound:
                continue  # erased meanwhile (its user or conversation, through the API): nothing left to take back
            invalidated.append(memory)
        if invalidated:
            LogEntry.objects.log_actions(
                user_id=request.user.pk,
                queryset=invalidated,
                action_flag=CHANGE,
                change_message="Invalidated: no longer current, kept with its history",
            )
            noun = "memory" if len(invalidated) == 1 else "memories"
            self.message_user(
                request,
                f"Invalidated {len(invalidated)} {noun}: no longer current, kept with their history (nothing was erased).",
                messages.SUCCESS,
            )
        if already:
            were, left = ("memory was", "it was") if already == 1 else ("memories were", "they were")
            self.message_user(request, f"{already} {were} no longer current already: left as {left}.", messages.WARNING)


# --- The conversation page's panel -------------------------------------------------------------------


def memories_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel | None:
    """The memories read from the conversation, most recently changed first, each with the messages it
    was read from and a link to its page; how far the extractor has read it, and how many memories its
    user has in all. None (no panel) when extraction is off for the tenant."""
    tenant = conversation.tenant
    if not tenant.setting("MEMORY_EXTRACTION_ENABLED"):
        return None
    memories_of_tenant = Memory.objects.for_tenant(tenant)
    read_here = Q(conversation_pks__contains=[conversation.pk])
    memories = list(
        memories_of_tenant.filter(read_here).defer("embedding").order_by("-updated_at", "-pk")[: derived.ROWS_SHOWN + 1]
    )
    shown = memories[: derived.ROWS_SHOWN]
    user_id = conversation.user_id
    total, of_user = len(memories), 0
    if user_id:  # both counts in one query: those read here, and the user's in all
        counts = memories_of_tenant.filter(read_here | Q(user_id=user_id)).aggregate(
            here=Count("pk", filter=read_here), of_user=Count("pk", filter=Q(user_id=user_id))
        )
        total, of_user = counts["here"], counts["of_user"]
    elif len(memories) > derived.ROWS_SHOWN:
        total = memories_of_tenant.filter(read_here).count()
    read_through = (
        ExtractionWatermark.objects.for_tenant(tenant)
        .filter(conversation=conversation)
        .values_list("read_through_seq", flat=True)
        .first()
    )
    places, stored = derived.message_places(conversation, [read_through] if read_through else [])
    read = (
        format_html(
            "Read through {}, {}.",
            derived.span(places[read_through], places[read_through], stored),
            derived.when(places[read_through].at),
        )
        if read_through
        else format_html("Not read yet ({} stored).", derived.plural(stored, "message"))
    )
    every_one = derived.changelist_url(request, Memory, conversation.tenant_id, user_id=user_id) if user_id else None
    closing = derived.more(every_one, f"All {derived.plural(of_user, 'memory', 'memories')} of user {user_id}") if user_id else ""
    if not memories:
        body = derived.join(
            derived.lead(read),
            derived.empty(
                "No memory read from this conversation yet: the extractor reads a conversation once "
                f"MEMORY_EXTRACTION_BATCH_TURNS={tenant.setting('MEMORY_EXTRACTION_BATCH_TURNS')} new user and assistant "
                "turns are persisted, or once it has been quiet MEMORY_EXTRACTION_QUIET_SECONDS="
                f"{tenant.setting('MEMORY_EXTRACTION_QUIET_SECONDS')} seconds with turns not yet read."
            ),
            closing if of_user else "",
        )
        return derived.Panel(title="Memories", body=body, figure="0")
    _source_messages_read(shown)
    rows = (
        derived.row(
            derived.join(
                derived.link(derived.change_url(request, memory), _preview(memory.text), memory.text[:2000]),
                ""
                if memory.current
                else format_html(" {}", badge("cold", "taken back", "no longer current: kept with its history")),
            ),
            format_html(
                "{} · {} · {} · changed {}",
                memory.kind,
                memory.subject,
                f"{memory.confidence:.2f}",
                derived.when(memory.updated_at),
            ),
            format_html("read from {}", _message_links(memory, memory.message_ids) or "no message"),
        )
        for memory in shown
    )
    return derived.Panel(
        title="Memories",
        figure=str(total),
        body=derived.join(
            derived.lead(format_html("{} read from this conversation. {}", derived.plural(total, "memory", "memories"), read)),
            derived.items(rows),
            closing,
        ),
    )


derived.derived_panel_register("memories", 30, memories_panel)


# --- Usage ---------------------------------------------------------------------------------------------


@admin.register(ExtractionUsage)
class ExtractionUsageAdmin(TenantScopedAdmin):
    """What the extractor used per tenant and UTC day: counted by the extraction, read-only here."""

    list_display = ("day", "tenant", *ExtractionUsage.COUNTED)
    list_filter = (("day", admin.DateFieldListFilter),)
    list_select_related = ("tenant",)
    list_per_page = 100
    ordering = ("-day", "tenant__slug")
    fields = list_display
    readonly_fields = list_display
    actions = None

    def get_list_display(self, request: HttpRequest) -> tuple:
        if request.user.is_superuser:
            return self.list_display
        return tuple(column for column in self.list_display if column != "tenant")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
