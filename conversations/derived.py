"""What the service derived from a conversation, on its admin page: the "Derived" panels.

The apps above this one derive rows from a conversation's messages (summaries, facts, memories,
vectors, checkpoints); this layer imports none of them. Each registers its panel from its own admin
module, which the admin loads at startup::

    derived_panel_register("summaries", 10, summaries_panel)

``summaries_panel(conversation, request)`` answers a ``Panel`` of server-side HTML, or None when it has
nothing to show there (extraction off for the tenant). Panels are shown by ``order``, then name.

The conversation reached the page through the scoped admin, so it is the operator's tenant's (a
superuser's: any tenant's). A panel reads within ``conversation.tenant`` only, and links only to the
admin pages the request's user may open (``change_url``, ``changelist_url``); its figures are that
tenant's. A panel reads a bounded number of rows (``ROWS_SHOWN``, one more to know whether there
are more) in a fixed number of queries, whatever the conversation holds. A panel whose backend does
not answer (Redis, or a service it calls) says so in words instead of failing the page.

A message is shown to a person by its place in the conversation ("messages 41–52 of 120", as the
transcript counts them: every stored message, oldest first) and its time, never by its seq, a
clock's reading no one can place (``message_places``, ``span``).
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.contrib import admin
from django.db.models import Count, Max, Model, Q, QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from conversations.models import Conversation, Message
from core.exceptions import ServiceUnavailable
from core.redis_client import CacheUnavailable

T = TypeVar("T")

# The rows a panel lists; the rest are a link to the app's list, filtered to the conversation or user.
ROWS_SHOWN = 10


@dataclass(frozen=True)
class Panel:
    """One panel: its title, a short figure beside it ("3 of 12"), and its body (safe HTML)."""

    title: str
    body: SafeString
    figure: str = ""


@dataclass(frozen=True)
class ShownPanel:
    name: str
    title: str
    body: SafeString
    figure: str


PanelFunction = Callable[[Conversation, HttpRequest], Panel | None]

_PANELS: dict[str, tuple[int, PanelFunction]] = {}


def derived_panel_register(name: str, order: int, function: PanelFunction) -> None:
    """Show ``function(conversation, request)`` on every conversation page, at ``order`` (registering
    a name again replaces its panel)."""
    _PANELS[name] = (order, function)


def derived_panels(conversation: Conversation, request: HttpRequest) -> list[ShownPanel]:
    """The registered panels of ``conversation`` in their order, those with nothing to show left out."""
    shown = []
    for name, (_, function) in sorted(_PANELS.items(), key=lambda item: (item[1][0], item[0])):
        try:
            panel = function(conversation, request)
        except CacheUnavailable:
            panel = Panel(title=name.capitalize(), body=empty("Redis is unreachable: this panel cannot be read now."))
        except ServiceUnavailable as error:
            panel = Panel(title=name.capitalize(), body=empty(f"Unavailable: {error.message}"))
        if panel is not None:
            shown.append(ShownPanel(name=name, title=panel.title, body=panel.body, figure=panel.figure))
    return shown


# --- Links: only to the pages the request's user may open -------------------------------------------


def model_admin(model: type[Model]) -> admin.ModelAdmin | None:
    """The admin site's ``ModelAdmin`` of ``model``, whose permission checks say what a user may open
    (None: not in the admin)."""
    return admin.site._registry.get(model)


def change_url(request: HttpRequest, obj: Model) -> str | None:
    """The admin page of ``obj`` (a row of the conversation's tenant), or None when the user may not open it."""
    registered = model_admin(type(obj))
    if registered is None or not registered.has_view_or_change_permission(request, obj):
        return None
    opts = obj._meta
    try:
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return None


def changelist_url(request: HttpRequest, model: type[Model], tenant_id: int, **filters: Any) -> str | None:
    """The admin list of ``model`` filtered by ``filters`` within the tenant ``tenant_id``, or None when
    the user may not open it. An operator's lists hold their tenant's rows only; a superuser's list is
    narrowed to the tenant too (by its tenant filter), or a user id would find the same id's rows of
    every tenant."""
    registered = model_admin(model)
    if registered is None or not registered.has_view_or_change_permission(request):
        return None
    if request.user.is_superuser:
        filters = {"tenant__id__exact": tenant_id, **filters}
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    return url + ("?" + urlencode(filters) if filters else "")


def link(url: str | None, text: str, title: str = "") -> SafeString:
    """A link, or the text alone when there is no page to open."""
    if url is None:
        return format_html('<span title="{}">{}</span>', title, text)
    return format_html('<a href="{}" title="{}">{}</a>', url, title, text)


# --- The markup every panel shares ------------------------------------------------------------------


def plural(number: int, noun: str, nouns: str | None = None) -> str:
    return f"{number} {noun if number == 1 else (nouns or noun + 's')}"


def empty(text: str) -> SafeString:
    """What an empty panel says: why it is empty, and what would fill it."""
    return format_html('<p class="memory-derived__empty">{}</p>', text)


def lead(content: str) -> SafeString:
    """The panel's first line: its figures."""
    return format_html('<p class="memory-derived__lead">{}</p>', content)


def items(rows: Iterable[SafeString]) -> SafeString:
    """A list of rows, each ``row(...)``."""
    return format_html('<ul class="memory-derived__list">{}</ul>', format_html_join("", "{}", ((row,) for row in rows)))


def row(head: str, meta: str = "", detail: str = "") -> SafeString:
    """One row: its link or name, a quiet line of figures, and an optional line of detail."""
    return format_html(
        '<li class="memory-derived__item"><div class="memory-derived__head">{}</div>{}{}</li>',
        head,
        format_html('<div class="memory-derived__meta">{}</div>', meta) if meta else "",
        format_html('<div class="memory-derived__detail">{}</div>', detail) if detail else "",
    )


def more(url: str | None, text: str) -> SafeString:
    """The panel's closing link to the whole list."""
    if url is None:
        return format_html('<p class="memory-derived__more">{}</p>', text)
    return format_html('<p class="memory-derived__more"><a href="{}">{} →</a></p>', url, text)


def listing(
    title: str,
    read: Sequence[T],
    every: QuerySet,
    row_of: Callable[[T], SafeString],
    *,
    every_url: str | None,
    noun: tuple[str, str],
    of: str,
    first_line: str = "",
) -> Panel:
    """A panel listing the first ``ROWS_SHOWN`` of ``read`` (read with one row more, to know whether
    there are more), each ``row_of(it)``; its figure is how many there are in all (``every`` counted
    only when there are more), and it closes with a link to ``every_url``, the whole list ("All 12
    summaries of this conversation": ``noun`` singular and plural, ``of`` whom)."""
    shown = read[:ROWS_SHOWN]
    total = len(read) if len(read) <= ROWS_SHOWN else every.count()
    return Panel(
        title=title,
        figure=str(total),
        body=join(
            lead(first_line) if first_line else "",
            items(row_of(each) for each in shown),
            more(every_url, f"All {plural(total, *noun)} of {of}") if every_url or total > len(shown) else "",
        ),
    )


def join(*parts: str) -> SafeString:
    return format_html_join("", "{}", ((part,) for part in parts if part))


def when(value: Any, shown: str = "%Y-%m-%d %H:%M") -> SafeString:
    """A time as the panels show it: UTC to the minute (``shown``), to the second in the title."""
    if value is None:
        return format_html("{}", "—")
    utc = value.astimezone(UTC)
    return format_html(
        '<time datetime="{}" title="{} UTC">{}</time>',
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        utc.strftime(shown),
    )


# --- Messages by their place in the conversation, never by seq ------------------------------------


@dataclass(frozen=True)
class Place:
    """Where a seq falls in the conversation: the position of the last stored message at or before
    it (1 for the oldest), and that message's time when it is the seq's own (None: not stored)."""

    position: int
    at: datetime | None = None


def message_places(conversation: Conversation, seqs: Iterable[int]) -> tuple[dict[int, Place], int]:
    """Each of ``seqs`` placed among the conversation's stored messages (archived ones too, as the
    transcript shows them), and how many are stored in all: one query, however many seqs."""
    wanted = sorted(set(seqs))
    found = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation)
        .aggregate(
            total=Count("pk"),
            **{f"position_{index}": Count("pk", filter=Q(seq__lte=seq)) for index, seq in enumerate(wanted)},
            **{f"at_{index}": Max("created_at", filter=Q(seq=seq)) for index, seq in enumerate(wanted)},
        )
    )
    places = {seq: Place(position=found[f"position_{index}"], at=found[f"at_{index}"]) for index, seq in enumerate(wanted)}
    return places, found["total"]


def span(first: Place, last: Place, total: int) -> str:
    """Messages from ``first`` to ``last`` in words: "messages 41–52 of 120" ("message 7 of 120" for one)."""
    if first.position == last.position:
        return f"message {first.position} of {total}"
    return f"messages {first.position}–{last.position} of {total}"


def when_span(first: Place, last: Place) -> SafeString:
    """The times of two messages, the second without its day when it is the first's."""
    if first.at is None or last.at is None or first.at == last.at:
        return when(first.at if first.at is not None else last.at)
    same_day = first.at.astimezone(UTC).date() == last.at.astimezone(UTC).date()
    return format_html("{} to {}", when(first.at), when(last.at, "%H:%M") if same_day else when(last.at))
