"""Whose conversation: a conversation belongs to at most one user, and a write naming another one is
refused (409 ``user_mismatch``, nothing written, nothing queued) on every way in: an append, a batch,
the memory document, the chat endpoint, the MCP tool, with Redis warm, cold or down. The agent is
not checked: several agents may write to one conversation."""

from typing import Any

import httpx
import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django_redis import get_redis_connection

from conversations import cache, services
from conversations.models import Conversation, Message
from core.exceptions import Conflict
from mcp_server import tools
from memory_client.http import Conflict as ClientConflict
from memory_client.http import MemoryServiceError
from tenants import services as tenant_services
from tests.conftest import client_for, run_queued_tasks
from tests.conversations.test_api import CONVERSATIONS, conversation_url, memory_url, messages_url, queue_depth, redis_unreachable
from tests.factories import message_payload


def mismatch(answer: Any, *, conversation_id: str = "c1", owner: str = "ada", sent: str = "grace") -> dict[str, Any]:
    assert answer.status_code == 409, answer.content
    error = answer.json()["error"]
    assert error["code"] == "user_mismatch"
    assert error["details"] == {"conversation_id": conversation_id, "conversation_user_id": owner, "user_id": sent}
    assert repr(owner) in error["message"]
    assert repr(sent) in error["message"]
    return error


def state(tenant: Any, conversation_id: str = "c1") -> dict[str, str]:
    fields = get_redis_connection("default").hgetall(cache.key(tenant.slug, conversation_id, "state"))
    return {name.decode(): value.decode() for name, value in fields.items()}


def reserved(tenant: Any, conversation_id: str = "c1") -> dict[bytes, bytes]:
    return get_redis_connection("default").hgetall(cache.key(tenant.slug, conversation_id, "reserved"))


def window(api: Any, conversation_id: str = "c1") -> list[str]:
    answer = api.get(messages_url(conversation_id))
    assert answer.status_code == 200, answer.content
    return [message["content"] for message in answer.json()["messages"]]


@pytest.fixture
def adas(api: Any, tenant: Any, no_worker: None) -> str:
    """Conversation c1, created by the API for the user ada (nothing queued)."""
    created = api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "ada", "agent_id": "travel"}, format="json")
    assert created.status_code == 201, created.content
    return "c1"


def test_an_append_naming_another_user_is_409_user_mismatch_and_writes_nothing(api, tenant, adas):
    answer = api.post(messages_url(adas), message_payload(content="Book it", user_id="grace"), format="json")

    mismatch(answer)
    assert queue_depth() == 0
    assert reserved(tenant) == {}
    assert window(api) == []
    assert Conversation.objects.for_tenant(tenant).get(conversation_id=adas).user_id == "ada"
    # The append lock went with the refusal: the conversation's own user appends at once.
    assert api.post(messages_url(adas), message_payload(content="Hi", user_id="ada"), format="json").status_code == 201


def test_a_batch_naming_another_user_is_refused_whole(api, tenant, adas):
    batch = {"messages": [message_payload(content="one"), message_payload(content="two")], "user_id": "grace"}

    mismatch(api.post(messages_url(adas), batch, format="json"))
    assert queue_depth() == 0
    assert window(api) == []


def test_an_append_naming_the_conversations_user_or_none_is_taken(api, tenant, adas):
    assert api.post(messages_url(adas), message_payload(content="one", user_id="ada"), format="json").status_code == 201
    assert api.post(messages_url(adas), message_payload(content="two"), format="json").status_code == 201

    assert window(api) == ["one", "two"]


def test_a_resend_of_stored_messages_naming_another_user_is_refused_too(api, tenant, adas):
    body = message_payload(id="0190f5a0-0000-7000-8000-000000000001", content="one", user_id="ada")
    assert api.post(messages_url(adas), body, format="json").status_code == 201

    mismatch(api.post(messages_url(adas), {**body, "user_id": "grace"}, format="json"))


def test_the_first_write_naming_a_user_claims_a_conversation_that_has_none(api, tenant, no_worker):
    assert api.post(messages_url("c1"), message_payload(content="anonymous"), format="json").status_code == 201
    assert api.post(messages_url("c1"), message_payload(content="ada's", user_id="ada"), format="json").status_code == 201

    # Refused before any worker wrote the claim to the row: the claim is the accepted write's.
    mismatch(api.post(messages_url("c1"), message_payload(content="grace's", user_id="grace"), format="json"))
    run_queued_tasks()
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").user_id == "ada"
    assert window(api) == ["anonymous", "ada's"]


def test_a_write_the_broker_refuses_claims_nothing(api, tenant, refusing_queue, transactional_db):
    created = api.post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")
    assert created.status_code == 201, created.content

    with override_settings(MEMORY_QUEUE=refusing_queue):
        refused = api.post(messages_url("c1"), message_payload(content="ada's", user_id="ada"), format="json")

    assert refused.status_code == 503, refused.content  # nothing stored: the conversation was not claimed either
    assert state(tenant)["user"] == "="  # learned from the row: no user


def test_the_user_check_costs_an_append_no_database_query(tenant, no_worker):
    message = {"role": "user", "content": "warm"}
    services.message_append(tenant=tenant, conversation_id="c1", messages=[message], user_id="ada")

    with CaptureQueriesContext(connection) as taken:
        services.message_append(tenant=tenant, conversation_id="c1", messages=[message], user_id="ada")
        with pytest.raises(Conflict) as refused:
            services.message_append(tenant=tenant, conversation_id="c1", messages=[message], user_id="grace")

    assert [query["sql"] for query in taken.captured_queries] == []
    assert refused.value.code == "user_mismatch"


def test_a_user_redis_has_forgotten_is_read_from_the_row(api, tenant, adas):
    assert api.post(messages_url(adas), message_payload(content="one", user_id="ada"), format="json").status_code == 201
    cache.invalidate(tenant_slug=tenant.slug, conversation_id=adas)  # drops the list and the user, keeps the seqs
    assert "user" not in state(tenant)

    mismatch(api.post(messages_url(adas), message_payload(content="two", user_id="grace"), format="json"))
    assert state(tenant)["user"] == "=ada"


def test_redis_forgetting_everything_still_refuses_another_user(api, tenant, adas):
    get_redis_connection("default").flushdb()

    mismatch(api.post(messages_url(adas), message_payload(content="two", user_id="grace"), format="json"))
    assert queue_depth() == 0


def test_with_redis_down_an_append_naming_another_user_is_refused_and_commits_nothing(api, tenant, adas):
    last_seq = Conversation.objects.for_tenant(tenant).get(conversation_id=adas).last_seq

    with redis_unreachable():
        mismatch(api.post(messages_url(adas), message_payload(content="Book it", user_id="grace"), format="json"))
        taken = api.post(messages_url(adas), message_payload(content="Hi", user_id="ada"), format="json")

    assert taken.status_code == 201, taken.content
    assert list(Message.objects.for_tenant(tenant).values_list("content", flat=True)) == ["Hi"]
    assert Conversation.objects.for_tenant(tenant).get(conversation_id=adas).last_seq > last_seq


def test_moving_a_conversation_to_another_user_changes_whose_writes_are_taken(api, tenant, adas):
    assert api.post(messages_url(adas), message_payload(content="ada's", user_id="ada"), format="json").status_code == 201

    moved = api.patch(conversation_url(adas), {"user_id": "grace"}, format="json")

    assert moved.status_code == 200, moved.content
    assert api.post(messages_url(adas), message_payload(content="grace's", user_id="grace"), format="json").status_code == 201
    mismatch(
        api.post(messages_url(adas), message_payload(content="ada's", user_id="ada"), format="json"), owner="grace", sent="ada"
    )


def test_another_agent_may_append_and_the_conversation_keeps_the_first(api, tenant, adas):
    answer = api.post(messages_url(adas), message_payload(content="handed over", agent_id="billing"), format="json")

    assert answer.status_code == 201, answer.content
    run_queued_tasks()
    assert Conversation.objects.for_tenant(tenant).get(conversation_id=adas).agent_id == "travel"
    assert window(api) == ["handed over"]


@pytest.mark.parametrize("name", ["user_id", "agent_id"])
def test_an_owner_id_inside_a_batchs_message_is_400_naming_it(api, tenant, adas, name):
    batch = {"messages": [message_payload(content="one"), message_payload(content="two", **{name: "grace"})]}

    answer = api.post(messages_url(adas), batch, format="json")

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"].startswith(f"messages[1].{name}: ")
    assert queue_depth() == 0


def test_a_memory_document_naming_another_user_is_409_and_saves_nothing(api, tenant, adas):
    answer = api.put(memory_url(adas), {"messages": [], "metadata": {"user_id": "grace", "note": "x"}}, format="json")

    mismatch(answer)
    assert queue_depth() == 0
    saved = api.put(memory_url(adas), {"messages": [], "metadata": {"user_id": "ada", "note": "y"}}, format="json")
    assert saved.status_code == 200, saved.content
    assert api.get(memory_url(adas)).json()["metadata"]["note"] == "y"


def test_a_memory_document_naming_a_user_claims_a_conversation_that_has_none(api, tenant, no_worker):
    saved = api.put(memory_url("c1"), {"messages": [], "metadata": {"user_id": "ada"}}, format="json")
    assert saved.status_code == 200, saved.content

    mismatch(api.post(messages_url("c1"), message_payload(content="grace's", user_id="grace"), format="json"))
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").user_id == "ada"


def test_with_redis_down_a_memory_document_naming_another_user_is_refused(api, tenant, adas):
    with redis_unreachable():
        mismatch(api.put(memory_url(adas), {"messages": [], "metadata": {"user_id": "grace"}}, format="json"))
    assert queue_depth() == 0


def test_a_chat_turn_naming_another_user_is_409_before_the_model_runs(tenant, adas):
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, "MEMORY_CHAT_MODEL": "fake:echo"})
    chat = client_for(tenant)

    answer = chat.post(f"{conversation_url(adas)}chat/", {"content": "Book it", "user_id": "grace"}, format="json")

    mismatch(answer)
    assert queue_depth() == 0
    assert window(chat) == []


def test_the_mcp_append_tool_refuses_another_user(tenant, adas):
    with pytest.raises(Conflict) as refused:
        tools.append_messages(
            tenant=tenant, conversation_id=adas, messages=[{"role": "user", "content": "Book it"}], user_id="grace"
        )

    assert refused.value.code == "user_mismatch"
    assert refused.value.details["conversation_user_id"] == "ada"
    assert queue_depth() == 0


def test_the_python_client_raises_the_refusal_as_a_conflict_with_its_code(api, tenant, adas):
    answer = api.post(messages_url(adas), message_payload(user_id="grace"), format="json")

    error = MemoryServiceError.from_response(httpx.Response(answer.status_code, content=answer.content))

    assert isinstance(error, ClientConflict)
    assert (error.code, error.details["conversation_user_id"]) == ("user_mismatch", "ada")
