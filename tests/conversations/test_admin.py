"""The operators' admin for conversations and dead letters, through Django's test client.

``operator`` is staff of acme (``tenant``); globex (``other_tenant``) owns conversations that must
never show up for them. The browser walk-through is in ``test_admin_browser.py``.
"""

import json
import uuid
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations import cache, services
from conversations.models import Conversation, DeadLetter, Message, Tombstone, tombstone_key
from conversations.services import messages as message_shape
from tenants import services as tenant_services
from tests.conftest import run_queued_tasks, take_queued_tasks
from tests.factories import conversation_with_messages, message_payload

CHANGELIST = "/admin/conversations/conversation/"


def change_url(conversation: Conversation) -> str:
    return f"{CHANGELIST}{conversation.pk}/change/"


def listed_ids(answer: Any) -> list[str]:
    return [conversation.conversation_id for conversation in answer.context["cl"].result_list]


def run_action(client: Any, action: str, conversations: list[Conversation], **extra: str) -> Any:
    return client.post(CHANGELIST, {"action": action, "_selected_action": [c.pk for c in conversations], **extra})


@pytest.fixture
def superuser_client(client: Any, db: Any) -> Any:
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-password-2"))
    return client


@pytest.fixture
def acme_and_globex(tenant: Any, other_tenant: Any) -> dict[str, Conversation]:
    return {
        "acme": conversation_with_messages(tenant, "acme-chat", 4, user_id="u-acme", agent_id="support"),
        "globex": conversation_with_messages(other_tenant, "globex-chat", 3, user_id="u-globex"),
    }


# --- Scoping: staff see their tenant, superusers every tenant ------------------------------------


def test_an_operator_lists_only_their_tenants_conversations(operator_client, acme_and_globex):
    answer = operator_client.get(CHANGELIST)

    assert answer.status_code == 200
    assert listed_ids(answer) == ["acme-chat"]
    assert b"globex-chat" not in answer.content


@pytest.mark.parametrize("suffix", ["change/", "history/", "erase/"])
def test_another_tenants_conversation_by_url_is_a_404(operator_client, acme_and_globex, suffix):
    answer = operator_client.get(f"{CHANGELIST}{acme_and_globex['globex'].pk}/{suffix}")

    assert answer.status_code == 404
    assert b"globex-chat" not in answer.content


def test_another_tenants_conversation_cannot_be_rebuilt_or_erased_by_post(operator_client, acme_and_globex, other_tenant):
    globex = acme_and_globex["globex"]

    rebuild = operator_client.post(f"{CHANGELIST}{globex.pk}/rebuild/")
    erase = operator_client.post(f"{CHANGELIST}{globex.pk}/erase/", {"confirm": "yes"})
    action = run_action(operator_client, "erase", [globex], confirm="yes")

    assert (rebuild.status_code, erase.status_code) == (404, 404)
    assert action.status_code in (200, 302)
    assert Conversation.objects.for_tenant(other_tenant).filter(conversation_id="globex-chat").exists()
    assert not cache.states(conversations=[("globex", "globex-chat")])[("globex", "globex-chat")].cached


def test_a_staff_user_bound_to_no_tenant_sees_nothing(client, acme_and_globex):
    user = get_user_model().objects.create_user("loose", password="a-long-password-3", is_staff=True)
    user.groups.add(tenant_services.operator_group())
    client.force_login(user)

    assert client.get(CHANGELIST).status_code == 403
    assert client.get(change_url(acme_and_globex["acme"])).status_code in (403, 404)


def test_a_superuser_lists_every_tenant_and_filters_by_tenant(superuser_client, acme_and_globex, other_tenant):
    everything = superuser_client.get(CHANGELIST)
    globex_only = superuser_client.get(CHANGELIST, {"tenant__id__exact": other_tenant.pk})

    assert sorted(listed_ids(everything)) == ["acme-chat", "globex-chat"]
    assert listed_ids(globex_only) == ["globex-chat"]


# --- The list: columns, search, cache state, bounded queries ----------------------------------------


def test_the_list_searches_by_id_user_message_id_and_message_words(operator_client, tenant, acme_and_globex):
    conversation_with_messages(tenant, "other-chat", 2, user_id="u-other")
    Message.objects.for_tenant(tenant).filter(conversation=acme_and_globex["acme"], seq=2).update(
        content="the invoice for order 4711 was refunded"
    )
    Message.objects.for_tenant(acme_and_globex["globex"].tenant).filter(seq=1).update(content="invoice refunded too")
    message_id = str(Message.objects.for_tenant(tenant).get(conversation__conversation_id="other-chat", seq=1).message_id)

    def search(term: str) -> list[str]:
        return sorted(listed_ids(operator_client.get(CHANGELIST, {"q": term})))

    assert search("acme-ch") == ["acme-chat"]
    assert search("u-other") == ["other-chat"]
    assert search(message_id) == ["other-chat"]
    assert search("invoice refunded") == ["acme-chat"]
    assert search('"order 4711"') == ["acme-chat"]
    assert search("invoice -refunded") == []


def test_the_list_shows_cache_state_with_list_length_ttl_and_pending_writes(operator_client, api, tenant, no_worker):
    conversation_with_messages(tenant, "cold", 3)
    api.post("/api/v1/conversations/warm/messages/", message_payload(), format="json")  # pending, cache warm

    answer = operator_client.get(CHANGELIST)

    rows = {c.conversation_id: c for c in answer.context["cl"].result_list}
    assert not rows["cold"].cache_state.cached
    assert rows["warm"].cache_state.cached
    assert rows["warm"].cache_state.pending == 1
    assert rows["warm"].cache_state.length == 1
    assert 0 < rows["warm"].cache_state.ttl <= 86400
    assert b"not cached" in answer.content
    assert b"1 pending" in answer.content


def test_the_list_says_so_when_redis_is_unreachable(operator_client, acme_and_globex, settings):
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"}}

    answer = operator_client.get(CHANGELIST)

    assert answer.status_code == 200
    assert b"Redis unreachable" in answer.content


def test_the_list_runs_the_same_number_of_queries_for_5_or_50_conversations(operator_client, tenant):
    for index in range(5):
        conversation_with_messages(tenant, f"c{index}", 1)
    operator_client.get(CHANGELIST)  # warm the per-process caches (content types)
    with CaptureQueriesContext(connection) as few:
        assert operator_client.get(CHANGELIST).status_code == 200
    for index in range(5, 50):
        conversation_with_messages(tenant, f"c{index}", 1)
    with CaptureQueriesContext(connection) as many:
        assert len(listed_ids(operator_client.get(CHANGELIST))) == 50

    assert len(many) == len(few) <= 10


# --- The conversation page ---------------------------------------------------------------------------


def test_the_conversation_page_runs_the_same_number_of_queries_for_10_or_1000_messages(operator_client, tenant):
    small = conversation_with_messages(tenant, "small", 10)
    large = conversation_with_messages(tenant, "large", 1000)
    operator_client.get(change_url(small))  # warm the per-process caches (content types)

    with CaptureQueriesContext(connection) as few:
        assert operator_client.get(change_url(small)).status_code == 200
    with CaptureQueriesContext(connection) as many:
        answer = operator_client.get(change_url(large))

    # The page's own 10, and the derived panels' (conversations.derived): at most 12, whatever their rows.
    assert len(many) == len(few) <= 22, "\n".join(q["sql"][:150] for q in many.captured_queries)
    assert len(answer.context["transcript"].messages) == 100


def test_the_transcript_opens_on_the_newest_page_and_pages_back(operator_client, tenant):
    conversation = conversation_with_messages(tenant, "long", 250)

    newest = operator_client.get(change_url(conversation))
    oldest = operator_client.get(change_url(conversation), {"page": 1})

    assert [m["seq"] for m in newest.context["transcript"].messages] == list(range(201, 251))
    assert newest.context["transcript"].pages == 3
    assert [m["seq"] for m in oldest.context["transcript"].messages] == list(range(1, 101))
    assert b'href="?page=2#transcript"' in newest.content


def test_the_transcript_shows_pending_and_persisted_messages_every_role_and_metadata(operator_client, api, tenant, no_worker):
    roles = ["system", "user", "assistant", "tool"]
    api.post(
        "/api/v1/conversations/c1/messages/",
        {"messages": [message_payload(role=role, content=f"a {role} says hi", metadata={"step": role}) for role in roles]},
        format="json",
    )
    run_queued_tasks()
    api.post("/api/v1/conversations/c1/messages/", message_payload(content="still waiting"), format="json")
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")

    answer = operator_client.get(change_url(conversation))

    shown = answer.context["transcript"].messages
    assert [(m["role"], m["status"]) for m in shown] == [(role, "persisted") for role in roles] + [("user", "pending")]
    page = answer.content.decode()
    for role in roles:
        assert f"memory-message--{role}" in page
    assert "&quot;step&quot;: &quot;tool&quot;" in page
    assert 'data-status="pending"' in page


def test_message_content_is_shown_escaped(operator_client, tenant):
    conversation = conversation_with_messages(tenant, "c1", 1)
    Message.objects.for_tenant(tenant).filter(conversation=conversation).update(content="<script>alert(1)</script>")

    page = operator_client.get(change_url(conversation)).content.decode()

    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_conversation_page_edits_owner_ids_and_archive_but_never_messages(operator_client, tenant):
    conversation = conversation_with_messages(tenant, "c1", 2, user_id="u1")
    before = list(Message.objects.for_tenant(tenant).values_list("content", flat=True))

    answer = operator_client.post(
        change_url(conversation),
        {"user_id": "u2", "agent_id": "a2", "archived": "on", "metadata": "{}", "content": "tampered", "message_count": 99},
    )

    assert answer.status_code == 302, answer.content
    conversation.refresh_from_db()
    assert (conversation.user_id, conversation.agent_id, conversation.archived, conversation.message_count) == (
        "u2",
        "a2",
        True,
        2,
    )
    assert list(Message.objects.for_tenant(tenant).values_list("content", flat=True)) == before
    assert operator_client.get("/admin/conversations/message/").status_code == 404  # no message admin to edit


# --- Actions -------------------------------------------------------------------------------------------


def test_rebuild_from_the_page_and_as_an_action_fills_the_cache_and_is_logged(operator_client, operator, tenant):
    first = conversation_with_messages(tenant, "c1", 3)
    second = conversation_with_messages(tenant, "c2", 2)

    page = operator_client.post(f"{CHANGELIST}{first.pk}/rebuild/")
    action = run_action(operator_client, "rebuild_cache", [second])

    assert (page.status_code, action.status_code) == (302, 302)
    states = cache.states(conversations=[("acme", "c1"), ("acme", "c2")])
    assert [states[("acme", "c1")].length, states[("acme", "c2")].length] == [3, 2]
    logged = LogEntry.objects.filter(user=operator, action_flag=CHANGE, change_message__startswith="Rebuilt the cache")
    assert sorted(logged.values_list("object_id", flat=True)) == sorted([str(first.pk), str(second.pk)])


def test_archive_and_unarchive_change_the_flag_and_are_logged(operator_client, operator, tenant):
    conversation = conversation_with_messages(tenant, "c1", 1)

    run_action(operator_client, "archive", [conversation])
    archived = Conversation.objects.for_tenant(tenant).get(pk=conversation.pk).archived
    run_action(operator_client, "unarchive", [conversation])

    assert archived is True
    assert Conversation.objects.for_tenant(tenant).get(pk=conversation.pk).archived is False
    assert list(LogEntry.objects.filter(user=operator).values_list("change_message", flat=True).order_by("pk")) == [
        "Archived",
        "Unarchived",
    ]


def test_export_streams_json_with_every_message_in_order_and_only_this_tenants(operator_client, tenant, acme_and_globex):
    conversation_with_messages(tenant, "big", 2500)
    selected = [
        acme_and_globex["acme"],
        Conversation.objects.for_tenant(tenant).get(conversation_id="big"),
        acme_and_globex["globex"],
    ]

    answer = run_action(operator_client, "export_json", selected)

    assert answer.status_code == 200
    assert answer["Content-Disposition"].startswith('attachment; filename="conversations-')
    exported = json.loads(b"".join(answer.streaming_content))
    by_id = {c["conversation_id"]: c for c in exported["conversations"]}
    assert sorted(by_id) == ["acme-chat", "big"]
    assert [m["seq"] for m in by_id["big"]["messages"]] == list(range(1, 2501))
    assert by_id["acme-chat"]["memory"]["metadata"]["tenant_id"] == "acme"
    assert LogEntry.objects.filter(change_message="Exported as JSON").count() == 2


def exported_messages(client: Any, conversation: Conversation) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    answer = run_action(client, "export_json", [conversation])
    assert answer.status_code == 200
    (exported,) = json.loads(b"".join(answer.streaming_content))["conversations"]
    return exported, exported["messages"]


def test_the_export_holds_the_acknowledged_writes_no_worker_has_persisted_yet(operator_client, api, tenant, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(content="persisted"), format="json")
    run_queued_tasks()
    queued = [
        api.post("/api/v1/conversations/c1/messages/", message_payload(content=text), format="json").json()["messages"][0]
        for text in ("queued one", "queued two")
    ]
    api.put("/api/v1/conversations/c1/memory/", {"messages": [{"role": "user", "content": "saved"}]}, format="json")
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")

    exported, messages = exported_messages(operator_client, conversation)

    assert [m["content"] for m in messages] == ["persisted", "queued one", "queued two"]
    assert [m["status"] for m in messages] == ["persisted", "pending", "pending"]
    assert [m["id"] for m in messages[1:]] == [m["id"] for m in queued]
    assert [m["seq"] for m in messages] == sorted(m["seq"] for m in messages)
    assert messages[0]["persisted_at"]
    assert messages[1]["persisted_at"] is None
    assert exported["pending_included"] is True
    assert exported["memory"]["messages"] == [{"role": "user", "content": "saved"}]
    assert Message.objects.for_tenant(tenant).count() == 1  # the export wrote nothing


def test_a_write_persisted_while_the_export_reads_is_exported_once(operator_client, api, tenant, no_worker, monkeypatch):
    api.post("/api/v1/conversations/c1/messages/", message_payload(content="racing"), format="json")
    read_before = cache.pending(tenant_slug="acme", conversation_id="c1")
    run_queued_tasks()  # persisted after the export read the pending writes, before it read the rows
    monkeypatch.setattr(cache, "pending", lambda **_: read_before)
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")

    _, messages = exported_messages(operator_client, conversation)

    assert [(m["content"], m["status"]) for m in messages] == [("racing", "persisted")]


def test_without_redis_the_export_says_its_pending_writes_are_missing(operator_client, api, tenant, no_worker, monkeypatch):
    api.post("/api/v1/conversations/c1/messages/", message_payload(content="kept"), format="json")
    run_queued_tasks()

    def unreachable(**_: Any) -> None:
        raise cache.CacheUnavailable("redis is down")

    monkeypatch.setattr(cache, "pending", unreachable)
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")

    exported, messages = exported_messages(operator_client, conversation)

    assert exported["pending_included"] is False
    assert [m["content"] for m in messages] == ["kept"]


def test_erase_asks_for_confirmation_then_erases_rows_cache_and_queued_writes(operator_client, operator, api, tenant, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    run_queued_tasks()
    api.post("/api/v1/conversations/c1/messages/", message_payload(content="queued"), format="json")  # still queued
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")

    asked = run_action(operator_client, "erase", [conversation])
    still_there = Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).exists()
    confirmed = run_action(operator_client, "erase", [conversation], confirm="yes")
    run_queued_tasks()  # the queued write arrives after the erase: dropped by the tombstone

    assert asked.status_code == 200
    assert b"confirm-erase" in asked.content
    assert still_there
    assert confirmed.status_code == 302
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="c1").exists()
    assert not Message.objects.for_tenant(tenant).exists()
    assert Tombstone.objects.for_tenant(tenant).filter(conversation_key=tombstone_key("c1")).exists()
    assert not cache.states(conversations=[("acme", "c1")])[("acme", "c1")].cached
    assert LogEntry.objects.filter(user=operator, action_flag=DELETION, object_id=str(conversation.pk)).exists()


def test_the_stock_delete_is_replaced_by_erase(operator_client, tenant):
    conversation = conversation_with_messages(tenant, "c1", 1)

    answer = operator_client.post(f"{CHANGELIST}{conversation.pk}/delete/", {"post": "yes"})

    assert answer.status_code == 403
    assert Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).exists()


# --- Dead letters -----------------------------------------------------------------------------------------


@pytest.fixture
def dead_letters(tenant: Any, other_tenant: Any) -> dict[str, DeadLetter]:
    def record(tenant_row: Any, conversation_id: str) -> DeadLetter:
        payload = {
            "tenant_id": tenant_row.pk,
            "tenant_slug": tenant_row.slug,
            "conversation_id": conversation_id,
            "messages": [
                {
                    "id": str(uuid.uuid4()),
                    "seq": message_shape._now_microseconds(),
                    "role": "user",
                    "content": "replay me",
                    "metadata": {},
                    "created_at": "2026-11-22T10:00:00+00:00",
                    "token_count": 2,
                }
            ],
        }
        return services.dead_letter_record(
            task_name="conversations.tasks.messages_persist", payload=payload, error="boom", attempts=12
        )

    return {"acme": record(tenant, "c1"), "globex": record(other_tenant, "g1")}


def test_dead_letters_are_listed_per_tenant_and_replayed_with_a_log_entry(operator_client, operator, dead_letters, no_worker):
    listed = operator_client.get("/admin/conversations/deadletter/")
    other = operator_client.get(f"/admin/conversations/deadletter/{dead_letters['globex'].pk}/change/")

    answer = operator_client.post(
        "/admin/conversations/deadletter/",
        {"action": "replay", "_selected_action": [dead_letters["acme"].pk, dead_letters["globex"].pk]},
    )

    assert [d.pk for d in listed.context["cl"].result_list] == [dead_letters["acme"].pk]
    assert other.status_code == 404
    assert answer.status_code == 302
    queued = take_queued_tasks()
    assert [payload["conversation_id"] for _, payload in queued] == ["c1"]
    dead_letters["acme"].refresh_from_db()
    dead_letters["globex"].refresh_from_db()
    assert dead_letters["acme"].replayed_at is not None
    assert dead_letters["globex"].replayed_at is None
    assert LogEntry.objects.filter(user=operator, change_message="Replayed").count() == 1
