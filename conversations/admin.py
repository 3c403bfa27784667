"""The operators' admin: find a conversation, read its transcript, repair its cache, erase it.

Every admin here starts from ``TenantScopedAdmin``: staff of a tenant see that tenant only, and
another tenant's conversation by URL is a 404. Changes go through the same services as the API and
the commands (``conversation_update``, ``cache_rebuild``, ``conversation_erase``,
``dead_letter_replay``), and every action is written to the admin log. Message history is read-only.
What an operator edits (owner ids, metadata) passes the door (``core.forms``): a value that
could not be stored is a form error, not a 500.

A conversation's page shows, beside its transcript, what the service derived from it: the "Derived"
panels (``conversations.derived``), which the apps above this one register from their own admin
modules; this one adds the cache's.

The JSON export holds every acknowledged message: the persisted rows and the writes still pending in
Redis, in seq order, one per id, each pending one marked ``"status": "pending"`` as on the transcript.
"""

import json
import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from conversations import cache, derived, selectors, services
from conversations.api.serializers import json_size
from conversations.models import CacheRepair, Conversation, DeadLetter, Message
from core.exceptions import ServiceUnavailable
from core.forms import StorableModelForm
from memory_wire.messages import tool_calls_of
from tenants.admin import TenantAdmin, TenantScopedAdmin, badge, moment_column, shortened, staff_tenant
from tenants.models import Tenant

TRANSCRIPT_PAGE_SIZE = 100
SEARCH_LIMIT = 1000  # conversations per kind of match in one admin search


def transcript_url(*, conversation_pk: int, position: int, seq: int) -> str:
    """The conversation's transcript at one message: the page holding its ``position`` (1 for the
    oldest), anchored at it (``#seq-<seq>``, the anchor each row of the transcript carries)."""
    page = max(1, -(-position // TRANSCRIPT_PAGE_SIZE))
    return reverse("admin:conversations_conversation_change", args=[conversation_pk]) + f"?page={page}#seq-{seq}"


def _log_many(request: HttpRequest, objects: list, message: str, flag: int = CHANGE) -> None:
    """One admin log entry per object, written in one query."""
    if objects:
        LogEntry.objects.log_actions(user_id=request.user.pk, queryset=objects, action_flag=flag, change_message=message)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


# --- Conversations ------------------------------------------------------------------------------


class ConversationChangeList(ChangeList):
    """Reads the cache state of the whole page from Redis in one round trip, not one per row."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        return super().get_queryset(request, exclude_parameters).defer("memory", "metadata")  # not shown in the list

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        pairs = [(conversation.tenant.slug, conversation.conversation_id) for conversation in self.result_list]
        try:
            states = cache.states(conversations=pairs)
        except cache.CacheUnavailable:
            states = None
        for conversation, pair in zip(self.result_list, pairs, strict=True):
            conversation.cache_state = states.get(pair) if states is not None else None


class ConversationForm(StorableModelForm):
    """The conversation's own fields; its metadata is a storable JSON object within MEMORY_MAX_METADATA_BYTES."""

    class Meta:
        model = Conversation
        fields = ("user_id", "agent_id", "archived", "metadata")

    def clean_metadata(self) -> dict[str, Any]:
        value = self.cleaned_data.get("metadata")
        if value is None:  # the field left empty
            return {}
        if not isinstance(value, dict):
            raise forms.ValidationError('Metadata is a JSON object, e.g. {"topic": "billing"}; {} for none.')
        size, limit = json_size(value), settings.MEMORY_MAX_METADATA_BYTES
        if size > limit:
            raise forms.ValidationError(f"Metadata is {size} bytes of JSON; the limit is MEMORY_MAX_METADATA_BYTES={limit}.")
        return value


@admin.register(Conversation)
class ConversationAdmin(TenantScopedAdmin):
    form = ConversationForm
    list_display = (
        "conversation",
        "tenant",
        "user",
        "agent",
        "message_count",
        "last_activity",
        "archived",
        "cache_state_badge",
    )
    list_filter = ("archived", ("updated_at", admin.DateFieldListFilter))
    list_select_related = ("tenant",)
    list_per_page = 50
    show_full_result_count = False  # one count per page view, not two, on 100,000 conversations
    ordering = ("-updated_at",)
    search_fields = ("conversation_id",)
    search_help_text = "The beginning of a conversation id, a user or agent id, a message id, or words from a message."
    fieldsets = (
        (None, {"fields": ("tenant", "conversation_id", "user_id", "agent_id", "archived")}),
        ("Metadata", {"fields": ("metadata",), "classes": ("collapse",)}),
        (
            "Counters",
            # Not last_seq: a clock's reading no one can place; the transcript numbers the messages.
            {"fields": ("message_count", "token_count", "memory_revision", "created_at", "updated_at")},
        ),
    )
    readonly_fields = (
        "tenant",
        "conversation_id",
        "message_count",
        "token_count",
        "memory_revision",
        "created_at",
        "updated_at",
    )
    actions = ("rebuild_cache", "archive", "unarchive", "export_json", "erase")
    change_form_template = "admin/conversations/conversation/change_form.html"

    class Media:
        css = {"all": ("memory/derived.css",)}

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ConversationChangeList

    def get_list_display(self, request: HttpRequest) -> tuple:
        if request.user.is_superuser:
            return self.list_display
        return tuple(column for column in self.list_display if column != "tenant")  # an operator has one tenant

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        """Each kind of match runs on its own index; their conversations are then listed together.

        One OR over the conversation row would read every conversation of the tenant. A search that
        matches more than ``SEARCH_LIMIT`` conversations per kind shows that many and says so.
        """
        term = search_term.strip()
        if not term:
            return queryset, False
        unordered = queryset.order_by()
        branches = [
            unordered.filter(conversation_id__startswith=term).values_list("pk", flat=True),
            unordered.filter(user_id=term).values_list("pk", flat=True),
            unordered.filter(agent_id=term).values_list("pk", flat=True),
            selectors.messages_matching(self._messages(request), words=term).values_list("conversation_id", flat=True),
        ]
        try:
            branches.append(self._messages(request).filter(message_id=uuid.UUID(term)).values_list("conversation_id", flat=True))
        except ValueError:
            pass  # not a message id
        found: set[int] = set()
        for branch in branches:
            hits = list(branch.distinct()[: SEARCH_LIMIT + 1])
            if len(hits) > SEARCH_LIMIT:
                messages.warning(
                    request, f"More than {SEARCH_LIMIT} conversations match {term!r}; showing some. Narrow the search."
                )
                hits = hits[:SEARCH_LIMIT]
            found.update(hits)
        return queryset.filter(pk__in=found), False

    def _messages(self, request: HttpRequest) -> QuerySet:
        tenant = None if request.user.is_superuser else staff_tenant(request.user)
        if tenant is not None:
            return Message.objects.for_tenant(tenant)
        return Message.unscoped.all()  # superusers search every tenant; the result is filtered by the scoped list

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # conversations begin with an agent's first write

    def has_delete_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False  # the stock delete would skip the cache and the queued writes: see "erase"

    def has_erase_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return super().has_delete_permission(request, obj)

    # --- Columns: long ids cut to their beginning, the whole id in the title

    @admin.display(description="Conversation id", ordering="conversation_id")
    def conversation(self, conversation: Conversation) -> str:
        return shortened(conversation.conversation_id)

    @admin.display(description="User id", ordering="user_id")
    def user(self, conversation: Conversation) -> str:
        return shortened(conversation.user_id)

    @admin.display(description="Agent id", ordering="agent_id")
    def agent(self, conversation: Conversation) -> str:
        return shortened(conversation.agent_id)

    @admin.display(description="Last activity", ordering="updated_at")
    def last_activity(self, conversation: Conversation) -> str:
        return format_html(
            '<time datetime="{}" title="{}">{} ago</time>',
            conversation.updated_at.isoformat(),
            conversation.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            timesince(conversation.updated_at),
        )

    @admin.display(description="Cache")
    def cache_state_badge(self, conversation: Conversation) -> str:
        state = getattr(conversation, "cache_state", None)
        if state is None:
            return badge("unknown", "Redis unreachable")
        return _cache_state_html(state, conversation.message_count, brief=True)

    # --- Saving and the conversation page

    def save_model(self, request: HttpRequest, obj: Conversation, form: Any, change: bool) -> None:
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        if changes:
            services.conversation_update(tenant=obj.tenant, conversation_id=obj.conversation_id, changes=changes)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if obj is not None:
            context.update(self._conversation_context(request, obj))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _conversation_context(self, request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
        try:
            page = int(request.GET["page"]) if "page" in request.GET else None
        except ValueError:
            page = None
        transcript = selectors.conversation_transcript(conversation=conversation, page=page, per_page=TRANSCRIPT_PAGE_SIZE)
        for message in transcript.messages:  # what the template shows beyond the stored fields
            message["created_at_value"] = datetime.fromisoformat(message["created_at"])
            message["metadata_json"] = json.dumps(message["metadata"], indent=2, ensure_ascii=False)
            message["tool_calls"] = _tool_calls(message["metadata"])
        memory = services.memory_document(tenant=conversation.tenant, conversation=conversation)
        return {
            "transcript": transcript,
            "page_numbers": _page_numbers(transcript.number, transcript.pages),
            # Page links keep the list's filters, so "back to the list" still finds the search.
            "keep_filters": "&" + urlencode({"_changelist_filters": request.GET["_changelist_filters"]})
            if request.GET.get("_changelist_filters")
            else "",
            "memory_json": json.dumps(memory, indent=2, ensure_ascii=False),
            "derived_panels": derived.derived_panels(conversation, request),
            "can_erase": self.has_erase_permission(request, conversation),
            "can_change": self.has_change_permission(request, conversation),
        }

    def get_urls(self) -> list:
        own = [
            path(
                "<path:object_id>/rebuild/",
                self.admin_site.admin_view(self.rebuild_view),
                name="conversations_conversation_rebuild",
            ),
            path("<path:object_id>/erase/", self.admin_site.admin_view(self.erase_view), name="conversations_conversation_erase"),
        ]
        return own + super().get_urls()

    def rebuild_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        conversation = self.get_object(request, object_id)
        if request.method != "POST" or not self.has_change_permission(request, conversation):
            raise PermissionDenied
        self.rebuild_cache(request, self.get_queryset(request).filter(pk=conversation.pk))
        return HttpResponseRedirect(reverse("admin:conversations_conversation_change", args=[conversation.pk]))

    def erase_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        conversation = self.get_object(request, object_id)
        if not self.has_erase_permission(request, conversation):
            raise PermissionDenied
        queryset = self.get_queryset(request).filter(pk=conversation.pk)
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            self._erase(request, queryset)
            return HttpResponseRedirect(reverse("admin:conversations_conversation_changelist"))
        return self._erase_confirmation(request, queryset, single=True)

    # --- Actions

    @admin.action(description="Rebuild the cache of the selected conversations", permissions=("change",))
    def rebuild_cache(self, request: HttpRequest, queryset: QuerySet) -> None:
        rebuilt, failed = [], []
        for conversation in queryset.select_related("tenant"):
            try:
                result = services.cache_rebuild(
                    tenant=conversation.tenant, conversation_id=conversation.conversation_id, allow_empty=True
                )
                services.memory_cache_rebuild(tenant=conversation.tenant, conversation=conversation)
                rebuilt.append((conversation, len(result.messages)))
            except (cache.CacheUnavailable, DatabaseError) as error:
                failed.append(f"{conversation.conversation_id} ({error})")
        for conversation, count in rebuilt:
            self.log_action(request, conversation, f"Rebuilt the cache ({count} messages cached)")
        if rebuilt:
            cached = sum(count for _, count in rebuilt)
            self.message_user(
                request,
                f"Rebuilt the cache of {_count(len(rebuilt), 'conversation')} ({cached} messages cached).",
                messages.SUCCESS,
            )
        if failed:
            self.message_user(
                request, f"Could not rebuild {len(failed)}: {', '.join(failed[:5])}. Check Redis and retry.", level=messages.ERROR
            )

    @admin.action(description="Archive the selected conversations", permissions=("change",))
    def archive(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set_archived(request, queryset, archived=True)

    @admin.action(description="Unarchive the selected conversations", permissions=("change",))
    def unarchive(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set_archived(request, queryset, archived=False)

    def _set_archived(self, request: HttpRequest, queryset: QuerySet, *, archived: bool) -> None:
        changed = list(queryset.exclude(archived=archived).select_related("tenant"))
        for conversation in changed:
            services.conversation_update(
                tenant=conversation.tenant, conversation_id=conversation.conversation_id, changes={"archived": archived}
            )
        verb = "Archived" if archived else "Unarchived"
        _log_many(request, changed, verb)
        self.message_user(request, f"{verb} {_count(len(changed), 'conversation')}.", messages.SUCCESS)

    @admin.action(description="Export the selected conversations as JSON", permissions=("view",))
    def export_json(self, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
        conversations = list(queryset.select_related("tenant"))
        _log_many(request, conversations, "Exported as JSON")
        response = StreamingHttpResponse(_export_stream(conversations), content_type="application/json")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="conversations-{stamp}.json"'
        return response

    @admin.action(description="Erase the selected conversations…", permissions=("erase",))
    def erase(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        if request.POST.get("confirm") == "yes":
            self._erase(request, queryset)
            return None
        return self._erase_confirmation(request, queryset, single=False)

    def _erase_confirmation(self, request: HttpRequest, queryset: QuerySet, *, single: bool) -> TemplateResponse:
        conversations = list(queryset.select_related("tenant")[:1000])
        context = {
            **self.admin_site.each_context(request),
            "title": "Erase conversations?",
            "opts": self.opts,
            "conversations": conversations,
            "message_total": sum(c.message_count for c in conversations),
            "single": single,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/conversations/conversation/erase_confirmation.html", context)

    def _erase(self, request: HttpRequest, queryset: QuerySet) -> None:
        erased, messages_erased = [], 0
        for conversation in queryset.select_related("tenant"):
            try:
                result = services.conversation_erase(tenant=conversation.tenant, conversation_id=conversation.conversation_id)
            except ServiceUnavailable as error:
                self.message_user(request, f"{conversation.conversation_id}: {error.message}", level=messages.ERROR)
                continue
            erased.append(conversation)
            messages_erased += result.messages
        _log_many(request, erased, "Erased with its messages, cache keys and queued writes", flag=DELETION)
        if erased:
            self.message_user(
                request,
                f"Erased {_count(len(erased), 'conversation')} and {_count(messages_erased, 'message')}.",
                messages.SUCCESS,
            )


def _cache_state_html(state: cache.CacheState, message_count: int, *, brief: bool = False) -> str:
    """The cache state as badges; ``brief`` (a list column) leaves the time to expiry to the title."""
    if not state.cached:
        shown = badge("cold", "not cached")
    else:
        left = _duration(state.ttl or 0)
        shown = badge(
            "warm",
            f"cached · {state.length}/{message_count}" + ("" if brief else f" · {left} left"),
            f"{state.length} of {message_count} messages in the cached list; the list expires in {left}",
        )
    if state.pending:
        shown += " " + badge("pending", f"{state.pending} pending", "acknowledged writes no worker has persisted yet")
    return mark_safe(shown)  # noqa: S308 - built from format_html parts above


def _cache_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel:
    """Whether the conversation's window is in Redis, how much of it against PostgreSQL, its writes not
    persisted yet, and whether it awaits a cache repair; Redis down is said in words."""
    repair = (
        CacheRepair.objects.for_tenant(conversation.tenant_id)
        .filter(conversation_id=conversation.conversation_id)
        .only("erase", "created_at")
        .first()
    )
    total = conversation.message_count
    try:
        pair = (conversation.tenant.slug, conversation.conversation_id)
        state = cache.states(conversations=[pair])[pair]
    except cache.CacheUnavailable:
        state = None
    if state is None:
        figure = "Redis unreachable"
        shown = derived.join(
            derived.lead(badge("unknown", "Redis unreachable")),
            derived.empty(
                "Redis does not answer: whether the window is cached is unknown. Reads are served from "
                f"PostgreSQL meanwhile ({derived.plural(total, 'message')}), without the writes still pending in Redis."
            ),
        )
    elif not state.cached:
        figure = "not cached"
        shown = derived.join(
            derived.lead(badge("cold", "not cached")),
            derived.empty(
                f"The window is not in Redis: the next read loads it from PostgreSQL ({derived.plural(total, 'message')}), "
                "or rebuild it now with “Rebuild cache”."
            ),
        )
    else:
        figure = f"{state.length}/{total}"
        limit = settings.MEMORY_CACHE_LIST_LIMIT
        capped = f" (the list keeps the newest MEMORY_CACHE_LIST_LIMIT={limit})" if state.length >= limit else ""
        shown = derived.join(
            derived.lead(badge("warm", f"cached · {state.length}/{total}")),
            format_html(
                '<p class="memory-derived__text">{} of the {} in PostgreSQL are in Redis{}; the list expires in {}.</p>',
                state.length,
                derived.plural(total, "message"),
                capped,
                _duration(state.ttl or 0),
            ),
        )
    facts = []
    if state is not None:
        facts.append(
            badge("pending", f"{state.pending} pending", "acknowledged writes no worker has persisted yet")
            + format_html(" {} acknowledged, not persisted yet", "write" if state.pending == 1 else "writes")
            if state.pending
            else format_html("{}", "No write waits to be persisted.")
        )
        facts.append(format_html("Memory document {}.", "cached" if state.memory_cached else "not cached"))
    if repair is None:
        facts.append(format_html("{}", "No cache repair pending."))
    else:
        facts.append(
            format_html(
                "{} since {}: {}",
                badge("pending", "awaits a cache repair"),
                derived.when(repair.created_at),
                "the conversation was erased while Redis was unreachable; the sweeper erases its keys once Redis answers."
                if repair.erase
                else "a write was persisted while Redis was unreachable; the sweeper invalidates the cached window "
                "once Redis answers, and the next read rebuilds it.",
            )
        )
    shown = derived.join(
        shown,
        format_html('<ul class="memory-derived__facts">{}</ul>', format_html_join("", "<li>{}</li>", ((f,) for f in facts))),
    )
    return derived.Panel(title="Cache", body=shown, figure=figure)


derived.derived_panel_register("cache", 60, _cache_panel)


def _tool_calls(metadata: Any) -> list[dict[str, Any]]:
    """The tool calls an assistant message made (OpenAI's or LangChain's shape), as the transcript shows them."""
    if not isinstance(metadata, dict):
        return []
    return [
        {"name": call["name"], "id": call["id"], "arguments": json.dumps(call["args"], indent=2, ensure_ascii=False)}
        for call in tool_calls_of(metadata)
    ]


def _page_numbers(current: int, pages: int) -> list[int | None]:
    """First, last and the pages around the current one; None marks a gap."""
    wanted = sorted({1, 2, pages - 1, pages, *range(current - 2, current + 3)} & set(range(1, pages + 1)))
    shown: list[int | None] = []
    for number in wanted:
        if shown and number - (shown[-1] or 0) > 1:
            shown.append(None)
        shown.append(number)
    return shown


def _export_stream(conversations: list[Conversation]) -> Iterator[str]:
    yield '{"exported_at": ' + json.dumps(timezone.now().isoformat()) + ', "conversations": ['
    for index, conversation in enumerate(conversations):
        export = selectors.conversation_export(conversation=conversation)
        head = json.dumps(export.head, ensure_ascii=False)
        yield ("," if index else "") + head[:-1] + ', "messages": ['
        for position, message in enumerate(export.messages):
            yield ("," if position else "") + json.dumps(message, ensure_ascii=False)
        yield "]}"
    yield "]}"


# --- Dead letters -----------------------------------------------------------------------------------


@admin.register(DeadLetter)
class DeadLetterAdmin(TenantScopedAdmin):
    list_display = ("id", "task", "tenant", "conversation", "attempts", "short_error", "created", "replayed")
    list_filter = (("replayed_at", admin.EmptyFieldListFilter), "task_name")
    list_select_related = ("tenant",)
    ordering = ("-created_at",)
    readonly_fields = ("tenant", "task_name", "conversation", "attempts", "error", "payload_json", "created_at", "replayed_at")
    fields = readonly_fields
    actions = ("replay",)

    @admin.display(description="Task", ordering="task_name")
    def task(self, dead_letter: DeadLetter) -> str:
        """The task's dotted name, wrapping after a dot or an underscore only."""
        parts = ((part,) for part in re.findall(r"[^._]+[._]?|[._]", dead_letter.task_name))
        return format_html('<span class="memory-dotted">{}</span>', format_html_join(mark_safe("<wbr>"), "{}", parts))

    @admin.display(description="Conversation")
    def conversation(self, dead_letter: DeadLetter) -> str:
        return shortened(str((dead_letter.payload or {}).get("conversation_id", "")))

    created = moment_column("created_at", "Created")
    replayed = moment_column("replayed_at", "Replayed")

    @admin.display(description="Error")
    def short_error(self, dead_letter: DeadLetter) -> str:
        error = dead_letter.error if len(dead_letter.error) <= 80 else dead_letter.error[:79] + "…"
        return format_html('<span class="memory-prose" title="{}">{}</span>', dead_letter.error[:2000], error)

    @admin.display(description="Payload")
    def payload_json(self, dead_letter: DeadLetter) -> str:
        return format_html('<pre class="memory-json">{}</pre>', json.dumps(dead_letter.payload, indent=2, ensure_ascii=False))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: DeadLetter | None = None) -> bool:
        return request.user.is_superuser

    @admin.action(description="Replay the selected dead letters", permissions=("change",))
    def replay(self, request: HttpRequest, queryset: QuerySet) -> None:
        replayed = []
        for dead_letter in queryset.select_related("tenant"):
            try:
                services.dead_letter_replay(dead_letter=dead_letter)
            except ServiceUnavailable as error:
                self.message_user(request, error.message, level=messages.ERROR)
                break
            replayed.append(dead_letter)
        _log_many(request, replayed, "Replayed")
        self.message_user(
            request, f"Replayed {_count(len(replayed), 'dead letter')}; the workers persist them now.", messages.SUCCESS
        )


# --- Tenants: their conversations' cache ------------------------------------------------------------

# The tenants app sits below this one and imports none of it: the tenant admin gets its action over
# the tenant's conversations here, by this subclass registered in its place.
admin.site.unregister(Tenant)


@admin.register(Tenant)
class TenantWithConversationsAdmin(TenantAdmin):
    actions = (*TenantAdmin.actions, "rebuild_cache")

    @admin.action(description="Rebuild the cache of every conversation (queued to the workers)")
    def rebuild_cache(self, request: HttpRequest, queryset: QuerySet) -> None:
        for tenant in queryset:
            try:
                services.tenant_cache_rebuild_queue(tenant=tenant)
            except ServiceUnavailable as error:
                self.message_user(request, error.message, level=messages.ERROR)
                return
            self.log_action(request, tenant, "Queued a rebuild of the cache of every conversation")
            self.message_user(request, f"Queued a cache rebuild of every conversation of {tenant.slug}.", messages.SUCCESS)


admin.site.site_header = "Conversation memory"
admin.site.site_title = "Conversation memory admin"
admin.site.index_title = "Operations"
admin.site.site_url = None
