"""The operators' admin for user facts: browse a user's facts and their history, delete a fact.

Scoped like every tenant-owned admin (``TenantScopedAdmin``): staff of a tenant see that tenant's
facts and changes only. Facts are written by agents through the API, so the admin never adds or
edits one. Deleting (whoever holds the delete permission) goes through ``services.fact_delete``, so
the deleted value stays in the history like any other deletion. The history is read-only for
everyone; a fact's page shows its newest changes and links to the rest.

A conversation's page lists its user's facts in its "Derived" panels (``facts_panel``).
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from conversations import derived
from conversations.models import Conversation
from core.exceptions import NotFound
from facts import services
from facts.models import UserFact, UserFactChange
from tenants.admin import TenantScopedAdmin

PREVIEW_CHARS = 80
# The newest changes a fact's page shows; the history admin lists them all.
HISTORY_ON_PAGE = 20


def _preview(text: str | None) -> str:
    return "" if text is None else Truncator(text).chars(PREVIEW_CHARS)


@admin.register(UserFact)
class UserFactAdmin(TenantScopedAdmin):
    list_display = ("user_id", "key", "value_preview", "token_count", "updated_at")
    list_filter = (("updated_at", admin.DateFieldListFilter),)
    list_per_page = 50
    ordering = ("-updated_at", "key")
    search_fields = ("user_id", "key")
    search_help_text = "Part of a user id or of a key (several words: each must match one of them)."
    fields = ("tenant", "user_id", "key", "value", "token_count", "created_at", "updated_at", "history")
    readonly_fields = fields

    @admin.display(description="Value")
    def value_preview(self, fact: UserFact) -> str:
        return _preview(fact.value)

    @admin.display(description="History (newest first)")
    def history(self, fact: UserFact) -> str:
        # The fact was found through the scoped queryset; its history is read within the same tenant.
        changes = UserFactChange.objects.for_tenant(fact.tenant_id).filter(user_id=fact.user_id, key=fact.key)
        rows = (
            (change.changed_at, change.action, _preview(change.previous_value), _preview(change.value))
            for change in changes.order_by("-changed_at", "-id")[:HISTORY_ON_PAGE]
        )
        every_change = (
            reverse("admin:facts_userfactchange_changelist") + "?" + urlencode({"user_id": fact.user_id, "key": fact.key})
        )
        return format_html(
            '<table class="memory-history"><thead><tr><th>Changed</th><th>Action</th><th>Previous value</th>'
            '<th>Value</th></tr></thead><tbody>{}</tbody></table><p><a href="{}">Every change of this key</a></p>',
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
            every_change,
        )

    def delete_model(self, request: HttpRequest, obj: UserFact) -> None:
        try:
            services.fact_delete(tenant=obj.tenant, user_id=obj.user_id, key=obj.key)
        except NotFound:
            pass  # deleted meanwhile (through the API): what was asked is done

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for fact in queryset.select_related("tenant"):
            self.delete_model(request, fact)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(UserFactChange)
class UserFactChangeAdmin(TenantScopedAdmin):
    list_display = ("changed_at", "user_id", "key", "action", "previous_value_preview", "value_preview")
    list_filter = ("action", ("changed_at", admin.DateFieldListFilter))
    list_per_page = 100
    ordering = ("-changed_at", "-id")
    search_fields = ("user_id", "key")
    search_help_text = "Part of a user id or of a key (several words: each must match one of them)."
    fields = ("tenant", "user_id", "key", "action", "previous_value", "value", "changed_at")
    readonly_fields = fields

    @admin.display(description="Value")
    def value_preview(self, change: UserFactChange) -> str:
        return _preview(change.value)

    @admin.display(description="Previous value")
    def previous_value_preview(self, change: UserFactChange) -> str:
        return _preview(change.previous_value)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # the history is kept; only erasing the user removes it


# --- The conversation page's panel -------------------------------------------------------------------


def facts_panel(conversation: Conversation, request: HttpRequest) -> derived.Panel:
    """The facts of the conversation's user (in the conversation's tenant: the same user id elsewhere
    is another user), most recently updated first, each linking to its page."""
    user_id = conversation.user_id
    if not user_id:
        return derived.Panel(
            title="User facts",
            figure="no user",
            body=derived.empty(
                "This conversation has no user id: facts are kept per user. An agent sets it with the "
                "conversation's writes (user_id), or an operator above."
            ),
        )
    facts_of_user = UserFact.objects.for_tenant(conversation.tenant_id).filter(user_id=user_id)
    facts = list(facts_of_user.order_by("-updated_at", "key")[: derived.ROWS_SHOWN + 1])
    if not facts:
        return derived.Panel(
            title="User facts",
            figure="0",
            body=derived.empty(
                f"No facts for user {user_id} yet: agents store them through the API "
                f"(PUT /api/v1/users/{user_id}/facts/<key>/) or the MCP tool set_fact."
            ),
        )

    def row(fact: UserFact) -> SafeString:
        return derived.row(
            format_html(
                "{} {}",
                derived.link(derived.change_url(request, fact), fact.key),
                format_html('<span class="memory-derived__value" title="{}">{}</span>', fact.value[:2000], _preview(fact.value)),
            ),
            format_html("updated {} · {} tok", derived.when(fact.updated_at), fact.token_count),
        )

    return derived.listing(
        "User facts",
        facts,
        facts_of_user,
        row,
        every_url=derived.changelist_url(request, UserFact, conversation.tenant_id, user_id=user_id),
        noun=("fact", "facts"),
        of="this user",
        first_line=format_html("Of user <code>{}</code>", user_id),
    )


derived.derived_panel_register("facts", 20, facts_panel)
