"""The operators' admin for extracted memories and the extractor's usage, through Django's test client.

``memories_operator`` is staff of acme (``tenant``) allowed to view, correct and invalidate memories;
globex (``other_tenant``) owns a memory that must never show up for them. Memories are written as an
extractor writes them (``memories_apply``, through the helpers of ``test_services``). The browser
walk-through is in ``test_admin_browser.py``.
"""

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Message
from extraction.models import ExtractionUsage, Memory, MemoryAction, MemoryChange
from tenants import services as tenant_services
from tests.extraction.test_services import a_memory, add, apply, conversation_of, first_source
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

MEMORIES = "/admin/extraction/memory/"
USAGE = "/admin/extraction/extractionusage/"
# What an operator needs here (also what tenants.services.OPERATOR_PERMISSIONS should give them).
MEMORY_PERMISSIONS = ("view_memory", "change_memory", "delete_memory", "view_extractionusage")


def change_url(memory: Memory) -> str:
    return f"{MEMORIES}{memory.pk}/change/"


def delete_url(memory: Memory) -> str:
    return f"{MEMORIES}{memory.pk}/delete/"


def grant_memory_permissions(user: Any) -> Any:
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="extraction", codename__in=MEMORY_PERMISSIONS))
    return user


@pytest.fixture
def memories_operator(operator: Any, operator_client: Any) -> Any:
    """The acme operator "ada", allowed to view, correct and invalidate memories and to view usage."""
    grant_memory_permissions(operator)
    return operator_client


@pytest.fixture
def superuser_client(client: Any) -> Any:
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-password-2"))
    return client


def memory_of(tenant: Any, conversation_id: str, user_id: str, text: str, **fields: Any) -> Memory:
    """A memory an extractor read from the first message of a new conversation."""
    conversation = conversation_of(tenant, conversation_id, user_id=user_id, texts=(f"Remember: {text}", "Noted."))
    apply(tenant, conversation, [add(text=text, source=first_source(tenant, conversation), **fields)])
    return Memory.objects.for_tenant(tenant).get(text=text)


@pytest.fixture
def acme_and_globex(tenant: Any, other_tenant: Any) -> dict[str, Memory]:
    return {
        "acme": memory_of(tenant, "c-acme", "caroline", "Caroline lives in Boston."),
        "globex": memory_of(other_tenant, "c-globex", "dana", "Dana keeps bees in Oslo."),
    }


def listed(answer: Any) -> list[str]:
    assert answer.status_code == 200
    return [memory.text for memory in answer.context["cl"].result_list]


def shown_as_on_the_page(memory: Memory, **changes: Any) -> dict[str, Any]:
    """The change form as the page shows ``memory`` (times to the second), with ``changes`` typed in."""
    values = {name: getattr(memory, name) for name in ("kind", "subject", "text", "valid_from", "valid_to", "confidence")}
    values.update(changes)
    data: dict[str, Any] = {}
    for name, value in values.items():
        if name in ("valid_from", "valid_to"):
            data[f"{name}_0"] = value.strftime("%Y-%m-%d") if value else ""
            data[f"{name}_1"] = value.strftime("%H:%M:%S") if value else ""
        else:
            data[name] = value
    return data


def changes_of(memory: Memory) -> list[MemoryChange]:
    return list(MemoryChange.objects.for_tenant(memory.tenant_id).filter(memory=memory).order_by("-changed_at", "-pk"))


# --- The list ----------------------------------------------------------------------------------------


def test_an_operator_lists_their_tenants_memories_newest_first_without_a_tenant_column(
    memories_operator, tenant, acme_and_globex
):
    newer = memory_of(tenant, "c-acme-2", "melanie", "Melanie paints sunsets.", kind="preference", confidence=0.8)

    answer = memories_operator.get(MEMORIES)

    assert listed(answer) == ["Melanie paints sunsets.", "Caroline lives in Boston."]
    html = answer.content.decode()
    assert "Dana keeps bees" not in html
    assert "column-tenant" not in html
    for shown in ("melanie", "preference", "0.80", "scripted-model", "column-current"):
        assert shown in html
    assert answer.context["cl"].result_list[0].pk == newer.pk


def test_the_list_filters_by_kind_current_and_model_and_searches_users_subjects_and_texts(memories_operator, tenant):
    memory_of(tenant, "c1", "caroline", "Caroline lives in Boston.")
    memory_of(tenant, "c2", "caroline", "Caroline likes hiking.", kind="preference")
    gone = memory_of(tenant, "c3", "melanie", "Melanie has a cat named Oliver.", subject="Melanie")
    memory_of(tenant, "c4", "melanie-2", "Someone else entirely.", subject="Oliver")
    memories_operator.post(delete_url(gone), {"post": "yes"})

    def texts(**query: str) -> list[str]:
        return sorted(listed(memories_operator.get(MEMORIES, query)))

    assert texts(kind__exact="preference") == ["Caroline likes hiking."]
    assert texts(current="no") == ["Melanie has a cat named Oliver."]
    assert "Melanie has a cat named Oliver." not in texts(current="yes")
    assert len(texts(model__exact="scripted-model")) == 3
    assert texts(model__exact="admin:ada") == ["Melanie has a cat named Oliver."]  # invalidated in the admin
    assert texts(q="melanie") == ["Melanie has a cat named Oliver."]  # the user id exactly, or words of subject and text
    assert texts(q="Oliver") == ["Melanie has a cat named Oliver.", "Someone else entirely."]
    assert texts(q="hiking caroline") == ["Caroline likes hiking."]


def test_a_superuser_lists_every_tenant_with_a_tenant_column_and_filter(superuser_client, acme_and_globex, other_tenant):
    everything = superuser_client.get(MEMORIES)
    globex_only = superuser_client.get(MEMORIES, {"tenant__id__exact": other_tenant.pk})

    assert sorted(listed(everything)) == ["Caroline lives in Boston.", "Dana keeps bees in Oslo."]
    assert "column-tenant" in everything.content.decode()
    assert listed(globex_only) == ["Dana keeps bees in Oslo."]


def test_the_list_runs_the_same_queries_for_5_or_50_memories_and_never_reads_the_vectors(memories_operator, tenant):
    for index in range(5):
        memory_of(tenant, f"c{index}", f"user-{index}", f"Memory number {index}.")
    memories_operator.get(MEMORIES)  # warm the per-process caches (content types)
    with CaptureQueriesContext(connection) as few:
        assert len(listed(memories_operator.get(MEMORIES))) == 5
    for index in range(5, 50):
        memory_of(tenant, f"c{index}", f"user-{index}", f"Memory number {index}.")
    with CaptureQueriesContext(connection) as many:
        assert len(listed(memories_operator.get(MEMORIES))) == 50

    assert len(many) == len(few) <= 10, "\n".join(query["sql"][:150] for query in many.captured_queries)
    listing = [query["sql"] for query in many.captured_queries if 'FROM "extracted_memories"' in query["sql"]]
    assert listing
    assert not any('"extracted_memories"."embedding"' in sql for sql in listing)


# --- A memory's page ---------------------------------------------------------------------------------


def test_a_memorys_page_shows_its_history_newest_first_and_links_each_source_to_its_message(memories_operator, tenant):
    first, memory = a_memory(tenant)
    moved = conversation_of(tenant, "c2", texts=("We moved to Denver in June.",))
    update = {
        "op": "update",
        "memory_id": str(memory.memory_id),
        "text": "Caroline lives in Denver.",
        "sources": [first_source(tenant, moved)],
    }
    apply(tenant, moved, [update])

    answer = memories_operator.get(change_url(memory))

    assert answer.status_code == 200
    html = answer.content.decode()
    history = html[html.index('class="memory-history"') :]
    assert history.index("memory-change--update") < history.index("memory-change--add")
    assert "Caroline lives in Denver." in history
    assert "Caroline lives in Boston." in history  # the text the update replaced
    for conversation in (first, moved):
        assert f'href="/admin/conversations/conversation/{conversation.pk}/change/?page=1#seq-1"' in html
    transcript = memories_operator.get(f"/admin/conversations/conversation/{moved.pk}/change/", {"page": 1})
    assert transcript.status_code == 200
    assert 'id="seq-1"' in transcript.content.decode()
    assert "We moved to Denver in June." in transcript.content.decode()


def test_a_source_link_opens_the_transcript_page_that_holds_the_message(memories_operator, tenant):
    rows = [("user" if seq % 2 else "assistant", f"turn {seq}", {}) for seq in range(1, 251)]
    long = conversation_with_messages(tenant, "long", rows=rows, user_id="caroline")
    said = Message.objects.for_tenant(tenant).get(conversation=long, seq=150)
    apply(tenant, long, [add(source=str(said.message_id))])
    memory = Memory.objects.for_tenant(tenant).get()

    html = memories_operator.get(change_url(memory)).content.decode()

    url = f"/admin/conversations/conversation/{long.pk}/change/?page=2#seq-150"
    assert f'href="{url}"' in html
    page = memories_operator.get(url.split("#")[0])
    assert [message["seq"] for message in page.context["transcript"].messages] == list(range(101, 201))


def test_a_memorys_page_reads_its_sources_and_history_in_the_same_queries_however_many(memories_operator, tenant):
    def repeated(user_id: str, times: int) -> Memory:
        """A memory read again from ``times`` conversations: one source and one change each."""
        for index in range(times):
            conversation = conversation_of(tenant, f"{user_id}-{index}", user_id=user_id)
            apply(tenant, conversation, [add(source=first_source(tenant, conversation))])
        return Memory.objects.for_tenant(tenant).get(user_id=user_id)

    once, often = repeated("once", 1), repeated("often", 30)
    memories_operator.get(change_url(once))  # warm the per-process caches (content types)

    with CaptureQueriesContext(connection) as few:
        assert memories_operator.get(change_url(once)).status_code == 200
    with CaptureQueriesContext(connection) as many:
        answer = memories_operator.get(change_url(often))

    assert len(many) == len(few) <= 12, "\n".join(query["sql"][:150] for query in many.captured_queries)
    assert len(often.message_ids) == 30
    assert answer.content.decode().count('class="memory-source"') == 30 + 30  # the sources, and each change's
    assert len([query for query in many.captured_queries if 'FROM "conversation_messages"' in query["sql"]]) == 1


# --- Correcting ---------------------------------------------------------------------------------------


def test_a_correction_is_made_through_the_service_recorded_as_history_and_logged(memories_operator, operator, tenant):
    _, memory = a_memory(tenant)

    answer = memories_operator.post(
        change_url(memory), shown_as_on_the_page(memory, text="Caroline lives in Cambridge, MA.", confidence=0.6)
    )

    assert answer.status_code == 302, answer.context and answer.context["adminform"].form.errors
    corrected = Memory.objects.for_tenant(tenant).get()
    assert (corrected.text, corrected.confidence, corrected.model) == ("Caroline lives in Cambridge, MA.", 0.6, "admin:ada")
    assert corrected.valid_from == memory.valid_from  # left as shown: not a change
    assert corrected.current
    newest = changes_of(corrected)[0]
    assert (newest.action, newest.text, newest.previous_text, newest.model) == (
        MemoryAction.UPDATE,
        "Caroline lives in Cambridge, MA.",
        "Caroline lives in Boston.",
        "admin:ada",
    )
    assert [change.action for change in changes_of(corrected)] == ["update", "add"]
    logged = LogEntry.objects.get(user=operator, object_id=str(memory.pk))
    assert logged.action_flag == CHANGE
    assert "Text" in logged.get_change_message()
    assert "Confidence" in logged.get_change_message()


def test_setting_valid_to_takes_a_memory_back_and_clearing_it_makes_it_current_again(memories_operator, tenant):
    _, memory = a_memory(tenant)
    ended = datetime(2024, 1, 31, 12, 0, tzinfo=UTC)

    memories_operator.post(change_url(memory), shown_as_on_the_page(memory, valid_to=ended))
    taken_back = Memory.objects.for_tenant(tenant).get()
    memories_operator.post(change_url(memory), shown_as_on_the_page(taken_back, valid_to=None))
    again = Memory.objects.for_tenant(tenant).get()

    assert (taken_back.valid_to, taken_back.current) == (ended, False)
    assert again.current
    assert [change.action for change in changes_of(again)] == ["update", "delete", "add"]


@pytest.mark.parametrize(
    ("field", "typed", "named"),
    [
        ("confidence", 1.5, "confidence must be a number from 0 to 1 (1.5 given)"),
        ("text", "word " * 500, "at most 2000"),
    ],
)
def test_a_correction_the_service_refuses_is_shown_on_the_form_and_writes_nothing(
    memories_operator, operator, tenant, field, typed, named
):
    _, memory = a_memory(tenant)

    answer = memories_operator.post(change_url(memory), shown_as_on_the_page(memory, **{field: typed}))

    assert answer.status_code == 200
    errors = answer.context["adminform"].form.errors
    assert named in " ".join(errors.get(field, []))
    assert named in answer.content.decode()
    unchanged = Memory.objects.for_tenant(tenant).get()
    assert (unchanged.text, unchanged.confidence, unchanged.model, unchanged.updated_at) == (
        memory.text,
        memory.confidence,
        memory.model,
        memory.updated_at,
    )
    assert [change.action for change in changes_of(unchanged)] == ["add"]
    assert not LogEntry.objects.filter(user=operator).exists()


def test_saving_the_page_unchanged_records_no_change(memories_operator, tenant):
    _, memory = a_memory(tenant)

    answer = memories_operator.post(change_url(memory), shown_as_on_the_page(memory))

    assert answer.status_code == 302
    assert Memory.objects.for_tenant(tenant).get().model == "scripted-model"
    assert [change.action for change in changes_of(memory)] == ["add"]


def test_nobody_adds_a_memory_by_hand(memories_operator, superuser_client):
    assert memories_operator.get(f"{MEMORIES}add/").status_code == 403
    assert superuser_client.get(f"{MEMORIES}add/").status_code == 403


# --- Deleting: invalidating, never erasing -------------------------------------------------------------


def test_the_delete_page_says_it_invalidates_then_keeps_the_memory_with_its_history(memories_operator, operator, tenant):
    _, memory = a_memory(tenant)

    confirmation = memories_operator.get(delete_url(memory))
    answer = memories_operator.post(delete_url(memory), {"post": "yes"}, follow=True)

    text = confirmation.content.decode()
    assert "Invalidating takes the memory" in text
    assert "Nothing is erased" in text
    assert "will be deleted" not in text
    assert answer.redirect_chain[-1][0] == change_url(memory)
    assert "Invalidated 1 memory: no longer current, kept with their history" in answer.content.decode()
    kept = Memory.objects.for_tenant(tenant).get()
    assert not kept.current
    newest = changes_of(kept)[0]
    assert (newest.action, newest.model, newest.text) == (MemoryAction.DELETE, "admin:ada", "Caroline lives in Boston.")
    assert LogEntry.objects.filter(user=operator, action_flag=CHANGE, change_message__startswith="Invalidated").count() == 1
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()


def test_the_invalidate_action_replaces_the_stock_delete_and_leaves_memories_already_taken_back_alone(memories_operator, tenant):
    boston = memory_of(tenant, "c1", "caroline", "Caroline lives in Boston.")
    hiking = memory_of(tenant, "c2", "caroline", "Caroline likes hiking.")
    ended = datetime(2023, 6, 1, tzinfo=UTC)  # after it began (2023-05-08)
    memories_operator.post(change_url(hiking), shown_as_on_the_page(hiking, valid_to=ended))
    selected = {"action": "invalidate", "_selected_action": [boston.pk, hiking.pk]}

    actions = [name for name, _ in memories_operator.get(MEMORIES).context["action_form"].fields["action"].choices]
    confirmation = memories_operator.post(MEMORIES, selected)
    answer = memories_operator.post(MEMORIES, {**selected, "post": "yes"}, follow=True)

    assert "invalidate" in actions
    assert "delete_selected" not in actions
    assert "Nothing is erased" in confirmation.content.decode()
    assert "Yes, invalidate 1 memory" in confirmation.content.decode()
    assert Memory.objects.for_tenant(tenant).count() == 2
    assert not Memory.objects.for_tenant(tenant).get(pk=boston.pk).current
    assert Memory.objects.for_tenant(tenant).get(pk=hiking.pk).valid_to == ended  # not moved
    html = answer.content.decode()
    assert "Invalidated 1 memory" in html
    assert "1 memory was no longer current already" in html


# --- Usage -----------------------------------------------------------------------------------------------


def test_usage_is_listed_per_tenant_and_day_and_is_read_only(memories_operator, tenant, other_tenant):
    # Counted by the extraction; no service writes a day's figures by themselves, so they are set here.
    for owner, calls in ((tenant, 12), (other_tenant, 99)):
        ExtractionUsage.objects.for_tenant(owner).create(
            tenant=owner, day=datetime(2024, 3, 1, tzinfo=UTC).date(), calls=calls, tokens=34_567, failed_calls=2, dead_letters=1
        )
    ExtractionUsage.objects.for_tenant(tenant).create(tenant=tenant, day=datetime(2024, 3, 2, tzinfo=UTC).date(), calls=3)
    acme_day = ExtractionUsage.objects.for_tenant(tenant).get(calls=12)
    globex_day = ExtractionUsage.objects.for_tenant(other_tenant).get()

    answer = memories_operator.get(USAGE)
    page = memories_operator.get(f"{USAGE}{acme_day.pk}/change/")

    assert answer.status_code == 200
    assert [(row.day.isoformat(), row.calls) for row in answer.context["cl"].result_list] == [
        ("2024-03-02", 3),
        ("2024-03-01", 12),
    ]
    assert "34567" in answer.content.decode() or "34,567" in answer.content.decode()
    assert 'name="action"' not in answer.content.decode()
    assert page.status_code == 200
    assert 'name="calls"' not in page.content.decode()
    assert memories_operator.post(f"{USAGE}{acme_day.pk}/change/", {"calls": 0}).status_code == 403
    assert memories_operator.get(f"{USAGE}add/").status_code == 403
    assert memories_operator.post(f"{USAGE}{acme_day.pk}/delete/", {"post": "yes"}).status_code == 403
    assert memories_operator.get(f"{USAGE}{globex_day.pk}/change/").status_code == 404
    assert ExtractionUsage.objects.for_tenant(tenant).get(pk=acme_day.pk).calls == 12


# --- Tenant scoping -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["change/", "delete/", "history/"])
def test_another_tenants_memory_by_url_is_a_404(memories_operator, acme_and_globex, suffix):
    answer = memories_operator.get(f"{MEMORIES}{acme_and_globex['globex'].pk}/{suffix}")

    assert answer.status_code == 404
    assert b"Dana keeps bees" not in answer.content


def test_another_tenants_memory_cannot_be_corrected_or_invalidated(memories_operator, acme_and_globex, other_tenant):
    globex = acme_and_globex["globex"]

    corrected = memories_operator.post(change_url(globex), shown_as_on_the_page(globex, text="Dana moved away."))
    deleted = memories_operator.post(delete_url(globex), {"post": "yes"})
    memories_operator.post(MEMORIES, {"action": "invalidate", "_selected_action": [globex.pk], "post": "yes"})

    assert (corrected.status_code, deleted.status_code) == (404, 404)
    untouched = Memory.objects.for_tenant(other_tenant).get()
    assert (untouched.text, untouched.current, untouched.model) == ("Dana keeps bees in Oslo.", True, "scripted-model")
    assert [change.action for change in changes_of(untouched)] == ["add"]


def test_globexs_operator_sees_and_edits_only_globexs_memories(client, acme_and_globex, other_tenant, tenant):
    globex_operator = grant_memory_permissions(
        tenant_services.operator_create(tenant=other_tenant, username="gus", password="a-long-password-4")
    )
    client.force_login(globex_operator)
    acme = acme_and_globex["acme"]

    assert listed(client.get(MEMORIES)) == ["Dana keeps bees in Oslo."]
    assert client.get(change_url(acme)).status_code == 404
    assert client.post(change_url(acme), shown_as_on_the_page(acme, text="Owned.")).status_code == 404
    assert Memory.objects.for_tenant(tenant).get().text == "Caroline lives in Boston."


def test_a_staff_user_bound_to_no_tenant_sees_no_memories(client, acme_and_globex):
    user = grant_memory_permissions(get_user_model().objects.create_user("loose", password="a-long-password-3", is_staff=True))
    client.force_login(user)

    assert client.get(MEMORIES).status_code == 403
    assert client.get(change_url(acme_and_globex["acme"])).status_code in (403, 404)
    assert client.get(USAGE).status_code == 403


@pytest.mark.parametrize(("day", "time"), [("0001-01-01", "00:00:00"), ("9999-12-31", "23:00:00"), ("0001-01-01", "23:59:59")])
@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
def test_a_time_that_could_not_be_read_back_is_a_form_error_and_the_memory_stays_readable(
    memories_operator, tenant, api, field, day, time
):
    _, memory = a_memory(tenant)
    typed = shown_as_on_the_page(memory) | {f"{field}_0": day, f"{field}_1": time}

    answer = memories_operator.post(change_url(memory), typed)

    assert answer.status_code == 200
    assert "is outside the times that can be stored" in " ".join(answer.context["adminform"].form.errors.get(field, []))
    unchanged = Memory.objects.for_tenant(tenant).get()
    assert (unchanged.valid_from, unchanged.valid_to) == (memory.valid_from, memory.valid_to)
    assert memories_operator.get(change_url(memory)).status_code == 200
    assert api.get(f"/api/v1/users/{memory.user_id}/memories/").status_code == 200
