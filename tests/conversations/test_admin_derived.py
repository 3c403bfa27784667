"""The "Derived" panels of a conversation's admin page, through Django's test client.

acme's conversation ``acme-chat`` of user ``u-shared`` has memories an extractor read from it, a
summary, vectors, facts, a checkpoint and a warm cache. globex (``other_tenant``) has a conversation
of the same id and a user of the same id, with more of each and a pending cache repair: acme's
operator (``operator_client``) must see none of it, neither as rows nor in a count, and gets a 404 on
globex's conversation. The browser walk-through is in ``test_admin_derived_browser.py``.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checkpoints import services as checkpoint_services
from checkpoints.models import Checkpoint
from conversations import services
from conversations.derived import ROWS_SHOWN
from conversations.models import CacheRepair, Conversation, Message
from extraction.models import ExtractionWatermark, Memory
from facts import services as fact_services
from facts.models import UserFact
from search import services as search_services
from search.models import MessageEmbedding
from summaries import services as summary_services
from summaries.models import Summary
from tenants.models import TenantStaff
from tests.conversations.test_api import redis_unreachable
from tests.factories import conversation_with_messages, extracted_memories, message_payload

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/conversations/conversation/"
BOSTON = {"op": "add", "kind": "fact", "subject": "Caroline", "text": "Caroline lives in Boston."}
POTTERY = {"op": "add", "kind": "preference", "subject": "Ana", "text": "Ana loves pottery."}
GLOBEX_SECRET = {"op": "add", "kind": "fact", "subject": "Globex", "text": "Globex keeps its quarterly secret."}


def change_url(conversation: Conversation) -> str:
    return f"{CHANGELIST}{conversation.pk}/change/"


def extracting(tenant: Any, on: bool = True) -> None:
    tenant.settings = {**tenant.settings, "MEMORY_EXTRACTION_ENABLED": on}
    tenant.save(update_fields=["settings"])


def panels(answer: Any) -> dict[str, Any]:
    assert answer.status_code == 200
    return {panel.name: panel for panel in answer.context["derived_panels"]}


def panel_html(answer: Any, name: str) -> str:
    """The markup of one panel as the page holds it."""
    html = answer.content.decode()
    anchor = 'id="cache-state"' if name == "cache" else f'id="derived-{name}"'
    start = html.index(anchor)
    section_end = html.index("</section>", start)
    end = html.find('data-panel="', html.index('data-panel="', start) + 1)
    return html[start : section_end if end == -1 else min(end, section_end)]


def hrefs(html: str) -> list[str]:
    return [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', html)]


@dataclass(frozen=True)
class World:
    acme: Conversation
    globex: Conversation


def derived_of(
    tenant: Any, conversation_id: str, user_id: str, *operations: dict, facts: dict, checkpoints: list[str]
) -> Conversation:
    """A conversation of ``user_id`` with memories read from it, a summary, vectors, facts and checkpoints,
    made by the services that make them."""
    extracted_memories(tenant, *operations, user_id=user_id, conversation_id=conversation_id)
    summary_services.summary_create_now(tenant=tenant, conversation_id=conversation_id)
    search_services.conversation_embed(tenant=tenant, conversation_id=conversation_id)
    fact_services.facts_set_many(tenant=tenant, user_id=user_id, facts=facts)
    for checkpoint_id in checkpoints:
        checkpoint_services.checkpoint_save(tenant=tenant, conversation_id=conversation_id, checkpoint_id=checkpoint_id, state={})
    return Conversation.objects.for_tenant(tenant).select_related("tenant").get(conversation_id=conversation_id)


@pytest.fixture
def world(tenant: Any, other_tenant: Any) -> World:
    for owner in (tenant, other_tenant):
        extracting(owner)
    acme = derived_of(
        tenant,
        "acme-chat",
        "u-shared",
        BOSTON,
        POTTERY,
        facts={"city": "Boston", "sister": "Ana"},
        checkpoints=["acme-cp-1"],
    )
    services.cache_rebuild(tenant=tenant, conversation_id="acme-chat", allow_empty=True)
    globex = derived_of(
        other_tenant,
        "acme-chat",
        "u-shared",
        GLOBEX_SECRET,
        BOSTON,
        POTTERY,
        facts={"city": "Globex City", "badge": "G-7", "floor": "13"},
        checkpoints=["globex-cp-1", "globex-cp-2"],
    )
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="acme-chat")
    return World(acme=acme, globex=globex)


# --- Every panel: its figures and its links -----------------------------------------------------------


def test_each_panel_shows_the_conversations_figures_and_links_to_their_pages(operator_client, world, tenant):
    answer = operator_client.get(change_url(world.acme))

    shown = panels(answer)
    assert list(shown) == ["summaries", "facts", "memories", "search", "checkpoints", "cache"]
    figures = {name: panel.figure for name, panel in shown.items()}
    assert figures == {
        "summaries": "1",
        "facts": "2",
        "memories": "2",
        "search": "2/2",
        "checkpoints": "1",
        "cache": "2/2",
    }

    summary = Summary.objects.for_tenant(tenant).get(conversation=world.acme)
    summaries = panel_html(answer, "summaries")
    assert f"/admin/summaries/summary/{summary.pk}/change/" in hrefs(summaries)
    assert "Messages 1–2 of 2" in summaries
    assert f"{summary.token_count} tok" in summaries
    assert f"/admin/summaries/summary/?conversation__id__exact={world.acme.pk}" in hrefs(summaries)

    facts = panel_html(answer, "facts")
    for fact in UserFact.objects.for_tenant(tenant).filter(user_id="u-shared"):
        assert f"/admin/facts/userfact/{fact.pk}/change/" in hrefs(facts)
        assert fact.value in facts
    assert "/admin/facts/userfact/?user_id=u-shared" in hrefs(facts)

    memories = panel_html(answer, "memories")
    first_message = Message.objects.for_tenant(tenant).get(conversation=world.acme, seq=1)
    for memory in Memory.objects.for_tenant(tenant).filter(user_id="u-shared"):
        assert f"/admin/extraction/memory/{memory.pk}/change/" in hrefs(memories)
        assert memory.text in memories
        assert memory.message_ids == [first_message.message_id]
    # Where each came from: the message it was read from, in this conversation's transcript.
    assert f"{change_url(world.acme)}?page=1#seq-1" in hrefs(memories)
    assert "acme-chat, message 1" in memories
    assert "Read through message 2 of 2, " in memories
    assert "/admin/extraction/memory/?user_id=u-shared" in hrefs(memories)

    search = panel_html(answer, "search")
    assert "<strong>2</strong> of the 2 assistant and user messages with text are embedded" in search
    assert "none waiting" in search
    assert f"/admin/search/messageembedding/?conversation__id__exact={world.acme.pk}" in hrefs(search)

    checkpoint = Checkpoint.objects.for_tenant(tenant).get(checkpoint_id="acme-cp-1")
    checkpoints = panel_html(answer, "checkpoints")
    assert f"/admin/checkpoints/checkpoint/{checkpoint.pk}/change/" in hrefs(checkpoints)
    assert "root graph" in checkpoints

    cache = panel_html(answer, "cache")
    assert "cached · 2/2" in cache
    assert "2 of the 2 messages in PostgreSQL are in Redis" in cache
    assert "No cache repair pending." in cache


def test_every_link_of_the_panels_opens_a_page_the_operator_may_see(operator_client, world, tenant):
    answer = operator_client.get(change_url(world.acme))
    html = "".join(panel_html(answer, name) for name in panels(answer))
    links = sorted({href for href in hrefs(html) if href.startswith("/admin/")})

    assert len(links) >= 10
    for href in links:
        page = operator_client.get(href)
        assert page.status_code == 200, href  # an unknown filter would redirect to "?e=1"

    vectors = operator_client.get(f"/admin/search/messageembedding/?conversation__id__exact={world.acme.pk}")
    listed = list(vectors.context["cl"].result_list)
    assert len(listed) == 2
    assert {vector.conversation_id for vector in listed} == {world.acme.pk}
    assert MessageEmbedding.objects.for_tenant(tenant).count() == 2


def test_a_staff_user_without_the_apps_permissions_sees_the_figures_without_links_to_pages_refused_to_them(client, world, tenant):
    user = get_user_model().objects.create_user("viewer", password="a-long-password-4", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="conversations", codename="view_conversation"))
    TenantStaff.objects.create(user=user, tenant=tenant)
    client.force_login(user)

    answer = client.get(change_url(world.acme))

    assert panels(answer)["summaries"].figure == "1"
    html = "".join(panel_html(answer, name) for name in panels(answer))
    for app in ("summaries", "facts", "extraction", "search", "checkpoints"):
        assert f"/admin/{app}/" not in html
    assert "Caroline lives in Boston." in html


# --- Tenants: nothing of globex, neither rows nor counts --------------------------------------------


def test_the_operator_sees_no_row_of_another_tenant_in_any_panel_or_count(operator_client, world, other_tenant):
    answer = operator_client.get(change_url(world.acme))

    html = answer.content.decode()
    for secret in ("Globex City", "G-7", "globex-cp", "Globex keeps its quarterly secret", "awaits a cache repair"):
        assert secret not in html
    for model in (Summary, UserFact, Memory, Checkpoint, MessageEmbedding):
        for row in model.objects.for_tenant(other_tenant).all():
            assert f"/{model._meta.model_name}/{row.pk}/change/" not in html
    assert panels(answer)["facts"].figure == "2"  # globex's u-shared has 3
    assert panels(answer)["memories"].figure == "2"  # globex's has 3
    assert "All 2 memories of user u-shared" in html


def test_another_tenants_conversation_is_a_404_with_nothing_of_its_panels(operator_client, world):
    answer = operator_client.get(change_url(world.globex))

    assert answer.status_code == 404
    assert b"Globex City" not in answer.content
    assert b"globex-cp" not in answer.content


def test_a_superuser_sees_each_conversations_figures_in_its_own_tenant(client, world):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-password-2"))

    acme, globex = panels(client.get(change_url(world.acme))), panels(client.get(change_url(world.globex)))

    assert (acme["facts"].figure, globex["facts"].figure) == ("2", "3")
    assert (acme["memories"].figure, globex["memories"].figure) == ("2", "3")
    assert (acme["checkpoints"].figure, globex["checkpoints"].figure) == ("1", "2")
    assert "awaits a cache repair" in globex["cache"].body
    assert "awaits a cache repair" not in acme["cache"].body
    # The lists a superuser reaches from the panels are narrowed to the conversation's tenant too.
    page = client.get(change_url(world.globex))
    for name, count in (("facts", 3), ("memories", 3), ("summaries", 1), ("checkpoints", 2), ("search", 2)):
        (every_one,) = [href for href in hrefs(panel_html(page, name)) if "/?" in href and "/conversations/" not in href]
        listed = client.get(every_one).context["cl"].result_list
        assert {row.tenant_id for row in listed} == {world.globex.tenant_id}, name
        assert len(listed) == count, name


# --- Messages by their place, never by seq --------------------------------------------------------------

# Seqs as a conversation's clock gives them (microseconds), not 1..n: a position cannot pass for one.
CLOCK_SEQS = [1796648115191694 + 7937 * n for n in range(6)]


def visible_text(html: str) -> str:
    """What a person reads on the page: the text and the titles shown on hover, not ids or addresses."""
    titles = " ".join(re.findall(r'title="([^"]*)"', html))
    return re.sub(r"<[^>]+>", " ", html) + " " + titles


def test_summaries_memories_and_the_transcript_show_positions_and_times_never_a_seq(operator_client, tenant):
    extracting(tenant)
    start = datetime(2026, 12, 7, 14, 2, tzinfo=UTC)
    conversation = Conversation.objects.for_tenant(tenant).create(
        tenant=tenant, conversation_id="clocked", message_count=6, last_seq=CLOCK_SEQS[-1], user_id="u-clock"
    )
    Message.objects.for_tenant(tenant).bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            seq=seq,
            role="user" if n % 2 == 0 else "assistant",
            content=f"turn {n}",
            created_at=start + timedelta(minutes=n),
            persisted_at=start + timedelta(minutes=n),
        )
        for n, seq in enumerate(CLOCK_SEQS)
    )
    summary = Summary.objects.for_tenant(tenant).create(
        tenant=tenant,
        conversation=conversation,
        text="They talked.",
        model="rule_based",
        message_count=3,
        pair_count=2,
        first_seq=CLOCK_SEQS[2],
        last_seq=CLOCK_SEQS[4],
        token_count=4,
    )
    ExtractionWatermark.objects.for_tenant(tenant).create(
        tenant=tenant, conversation=conversation, read_through_seq=CLOCK_SEQS[3]
    )

    page = operator_client.get(change_url(conversation))
    summary_page = operator_client.get(f"/admin/summaries/summary/{summary.pk}/change/")

    summaries, memories = panel_html(page, "summaries"), panel_html(page, "memories")
    assert "Messages 3–5 of 6" in summaries
    assert "2026-12-07 14:04</time> to <time" in summaries  # the times of messages 3 and 5
    assert ">14:06</time>" in summaries
    assert "Read through message 4 of 6, " in memories
    assert "2026-12-07 14:05" in memories
    assert "Messages 3–5 of 6, 2026-12-07 14:04 to 14:06" in re.sub(r"<[^>]+>", "", summary_page.content.decode())
    assert f"?page=1#seq-{CLOCK_SEQS[2]}" in summary_page.content.decode()  # linked to the transcript, at the message
    assert ">#1</span>" in page.content.decode()  # the transcript numbers its messages by their places
    assert ">#6</span>" in page.content.decode()
    for answer in (page, summary_page):
        shown = visible_text(answer.content.decode())
        for seq in CLOCK_SEQS:
            # Only in the ids a person expands on purpose (the transcript's "id" details), never as a figure.
            assert str(seq) not in shown.replace(f"seq: {seq}", ""), seq


# --- Empty states, settings that switch a panel off ----------------------------------------------------


def test_empty_panels_say_what_would_fill_them(operator_client, tenant):
    extracting(tenant)
    quiet = conversation_with_messages(tenant, "quiet", 3, user_id="u-new")

    answer = operator_client.get(change_url(quiet))

    shown = panels(answer)
    assert "No summary yet: summaries are made after every 10 message pairs" in shown["summaries"].body
    assert "(MEMORY_SUMMARY_EVERY=10)" in shown["summaries"].body
    assert "this conversation has 2 pairs" in shown["summaries"].body
    assert "No facts for user u-new yet" in shown["facts"].body
    assert "No memory read from this conversation yet" in shown["memories"].body
    assert "MEMORY_EXTRACTION_BATCH_TURNS=10" in shown["memories"].body
    assert "Not read yet" in shown["memories"].body
    assert shown["search"].figure == "0/3"
    assert "3 waiting" in shown["search"].body
    assert "manage.py reembed --tenant acme --conversation quiet" in shown["search"].body
    assert "No checkpoint" in shown["checkpoints"].body
    assert "MEMORY_MAX_CHECKPOINTS=20" in shown["checkpoints"].body
    assert shown["cache"].figure == "not cached"
    assert "the next read loads it from PostgreSQL (3 messages)" in shown["cache"].body


def test_a_conversation_without_a_user_says_facts_are_kept_per_user(operator_client, tenant):
    anonymous = conversation_with_messages(tenant, "anonymous", 2)

    facts = panels(operator_client.get(change_url(anonymous)))["facts"]

    assert facts.figure == "no user"
    assert "This conversation has no user id" in facts.body


def test_with_extraction_off_the_memories_panel_is_not_shown(operator_client, world, tenant):
    extracting(tenant, on=False)

    answer = operator_client.get(change_url(world.acme))

    assert "memories" not in panels(answer)
    assert 'id="derived-memories"' not in answer.content.decode()
    assert "Caroline lives in Boston." not in answer.content.decode()


def test_with_summaries_and_embeddings_off_their_panels_say_so(operator_client, tenant):
    tenant.settings = {"MEMORY_SUMMARY_EVERY": 0, "MEMORY_EMBEDDING_MODEL": ""}
    tenant.save(update_fields=["settings"])
    conversation = conversation_with_messages(tenant, "plain", 2, user_id="u-1")

    shown = panels(operator_client.get(change_url(conversation)))

    assert "periodic summaries are off for this tenant (MEMORY_SUMMARY_EVERY=0)" in shown["summaries"].body
    assert shown["search"].figure == "words only"
    assert "MEMORY_EMBEDDING_MODEL is empty" in shown["search"].body


# --- Redis down ------------------------------------------------------------------------------------------


def test_with_redis_down_the_page_renders_and_the_cache_panel_says_redis_is_unreachable(operator_client, world, tenant):
    CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="acme-chat")

    with redis_unreachable():
        answer = operator_client.get(change_url(world.acme))

    shown = panels(answer)
    assert shown["cache"].figure == "Redis unreachable"
    assert "Redis does not answer: whether the window is cached is unknown" in shown["cache"].body
    assert "awaits a cache repair" in shown["cache"].body
    assert "Redis unreachable" in shown["search"].body
    assert shown["summaries"].figure == "1"  # the panels of PostgreSQL's rows are all there
    assert shown["search"].figure == "2/2"


def test_writes_not_persisted_yet_show_in_the_cache_and_search_panels(operator_client, api, tenant, no_worker):
    api.post("/api/v1/conversations/warm/messages/", message_payload(user_id="u-1"), format="json")
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="warm")

    shown = panels(operator_client.get(change_url(conversation)))

    assert "1 pending" in shown["cache"].body
    assert "write acknowledged, not persisted yet" in shown["cache"].body
    assert "1 write acknowledged, not persisted yet" in shown["search"].body


# --- Bounded queries ------------------------------------------------------------------------------------


def queries_of(client: Any, conversation: Conversation) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(change_url(conversation)).status_code == 200
    return len(queries)


def busy_conversation(tenant: Any, conversation_id: str, rows: int, settings: Any) -> Conversation:
    """A conversation with ``rows`` memories, summaries, facts and checkpoints."""
    settings.MEMORY_MAX_CHECKPOINTS = 100
    operations = [{**BOSTON, "subject": f"person {n}", "text": f"Person {n} lives in town {n}."} for n in range(rows)]
    conversation = derived_of(
        tenant,
        conversation_id,
        f"user-{conversation_id}",
        *operations,
        facts={f"key-{n}": f"value {n}" for n in range(rows)},
        checkpoints=[f"{conversation_id}-cp-{n}" for n in range(rows)],
    )
    Summary.objects.for_tenant(tenant).bulk_create(
        Summary(
            tenant=tenant,
            conversation=conversation,
            text=f"Summary {n}.",
            model="rule_based",
            message_count=2,
            pair_count=100 + n,
            first_seq=1,
            last_seq=2,
            token_count=3,
        )
        for n in range(rows)
    )
    return conversation


def test_the_page_runs_the_same_number_of_queries_however_many_rows_each_panel_has(
    operator_client, tenant, settings, django_assert_max_num_queries
):
    extracting(tenant)
    few = busy_conversation(tenant, "few", ROWS_SHOWN + 1, settings)
    many = busy_conversation(tenant, "many", 3 * ROWS_SHOWN, settings)
    operator_client.get(change_url(few))  # the session and permissions read once

    assert queries_of(operator_client, few) == queries_of(operator_client, many)
    with django_assert_max_num_queries(24):  # the page: 10; the panels: 14 (the memories 5, with their sources)
        operator_client.get(change_url(many))
