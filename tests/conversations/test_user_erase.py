"""Erasing a user (``DELETE /api/v1/users/{user_id}/``) and retention: afterwards no trace of the
user is left in any table of PostgreSQL or any key or value of Redis."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from django_redis import get_redis_connection

from conversations import services
from conversations.models import Conversation, DeadLetter, Message
from extraction.services import Operation, memories_apply, messages_read
from search.services import conversation_embed
from summaries.services import summary_create_now
from tests.conftest import run_queued_tasks
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

USER = "zed-7f3a"
MARKERS = (USER, "quokka-secret", "Wollongong")


def tables_mentioning(text: str) -> list[str]:
    """Every table of the database with a row whose text form contains ``text`` (any column)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        tables = [name for (name,) in cursor.fetchall()]
        found = []
        for table in tables:
            cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE t::text ILIKE %s', [f"%{text}%"])  # noqa: S608 - names from pg_tables
            if cursor.fetchone()[0]:
                found.append(table)
        return found


def redis_mentioning(text: str) -> list[str]:
    redis = get_redis_connection("default")
    found = []
    for key in redis.scan_iter(count=1000):
        kind = redis.type(key).decode()
        if kind == "string":
            values = [redis.get(key) or b""]
        elif kind == "list":
            values = redis.lrange(key, 0, -1)
        elif kind == "hash":
            values = [*redis.hkeys(key), *redis.hvals(key)]
        elif kind == "zset":
            values = redis.zrange(key, 0, -1)
        elif kind == "set":
            values = list(redis.smembers(key))
        else:
            values = []
        if any(text.encode() in item for item in [key, *values]):
            found.append(key.decode())
    return found


def a_user_with_everything(api, tenant, user_id=USER, marker="quokka-secret", city="Wollongong"):
    for session in ("s1", "s2"):
        conversation_id = f"{user_id}-{session}"
        response = api.post(
            f"/api/v1/conversations/{conversation_id}/messages/",
            {
                "user_id": user_id,
                "messages": [
                    {"role": "user", "content": f"My {marker} is that I live in {city}."},
                    {"role": "assistant", "content": f"Noted: {marker}, {city}."},
                ],
            },
            format="json",
        )
        assert response.status_code == 201, response.content
        run_queued_tasks()
        conversation_embed(tenant=tenant, conversation_id=conversation_id)
        summary_create_now(tenant=tenant, conversation_id=conversation_id)
        assert (
            api.post(
                f"/api/v1/conversations/{conversation_id}/checkpoints/",
                {"checkpoint_id": "1", "state": {"note": marker}},
                format="json",
            ).status_code
            == 201
        )
        assert (
            api.post(
                f"/api/v1/conversations/{conversation_id}/context/", {"query": f"where do I live {marker}?"}, format="json"
            ).status_code
            == 200
        )
        assert api.get(f"/api/v1/conversations/{conversation_id}/messages/").status_code == 200
    assert api.put(f"/api/v1/users/{user_id}/facts/home/", {"value": f"{city} ({marker})"}, format="json").status_code in (
        200,
        201,
    )
    assert api.put(f"/api/v1/users/{user_id}/facts/home/", {"value": f"Sydney ({marker})"}, format="json").status_code == 200
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id=f"{user_id}-s1")
    read = messages_read(tenant=tenant, conversation=conversation)
    added = memories_apply(
        tenant=tenant,
        conversation=conversation,
        read_through_seq=2,
        read=read,
        operations=[
            Operation(
                op="add", kind="fact", subject=user_id, text=f"Lives in {city} ({marker})", sources=(str(read[0].message_id),)
            )
        ],
        model="scripted",
    )
    assert added.added == 1
    DeadLetter.objects.for_tenant(tenant).create(
        tenant=tenant,
        task_name="conversations.tasks.messages_persist",
        payload={"conversation_id": f"{user_id}-s1", "user_id": user_id, "messages": [{"content": marker}]},
        error="boom",
    )


def test_the_erase_answers_what_it_erased_and_leaves_no_trace_in_postgresql_or_redis(api, tenant):
    a_user_with_everything(api, tenant)
    a_user_with_everything(api, tenant, user_id="bystander", marker="wombat", city="Geelong")
    for marker in MARKERS:
        assert tables_mentioning(marker), f"{marker} should be stored before the erase"
        assert redis_mentioning(marker), f"{marker} should be cached before the erase"

    response = api.delete(f"/api/v1/users/{USER}/")

    assert response.status_code == 200
    assert response.json() == {
        "user_id": USER,
        "conversations_erased": 2,
        "messages_erased": 4,
        "embeddings_erased": 4,
        "summaries_erased": 2,
        "checkpoints_erased": 2,
        "facts_erased": 3,  # the fact and its two history rows
        "memories_erased": 1,
        "dead_letters_erased": 1,
        "cache_keys_erased": response.json()["cache_keys_erased"],
    }
    assert response.json()["cache_keys_erased"] > 0
    for marker in MARKERS:
        assert tables_mentioning(marker) == [], f"{marker} left in PostgreSQL"
        assert redis_mentioning(marker) == [], f"{marker} left in Redis"
    # The other user is untouched.
    assert Conversation.objects.for_tenant(tenant).filter(user_id="bystander").count() == 2
    assert "wombat" in str(api.get("/api/v1/users/bystander/facts/").json())


def test_a_write_queued_before_the_erase_is_dropped_by_the_worker(api, tenant):
    a_user_with_everything(api, tenant)
    api.post(
        f"/api/v1/conversations/{USER}-s1/messages/",
        {"user_id": USER, "messages": [{"role": "user", "content": "quokka-secret late"}]},
        format="json",
    )
    assert api.delete(f"/api/v1/users/{USER}/").status_code == 200
    run_queued_tasks()  # the worker gets the write only now
    assert tables_mentioning("quokka-secret") == []


def test_erasing_a_user_of_another_tenant_erases_nothing_here(api, other_api, tenant):
    a_user_with_everything(api, tenant)
    response = other_api.delete(f"/api/v1/users/{USER}/")
    assert response.status_code == 200
    assert response.json()["conversations_erased"] == 0
    assert Conversation.objects.for_tenant(tenant).filter(user_id=USER).count() == 2


def test_an_unknown_user_erases_nothing_and_is_not_an_error(api, tenant):
    response = api.delete("/api/v1/users/nobody/")
    assert response.status_code == 200
    assert response.json()["conversations_erased"] == 0


def test_retention_erases_conversations_idle_past_the_tenants_days_and_keeps_the_rest(tenant, other_tenant):
    tenant.settings = {"MEMORY_RETENTION_DAYS": 30}
    tenant.save()
    conversation_with_messages(tenant, "stale", 3)
    conversation_with_messages(tenant, "fresh", 3)
    conversation_with_messages(other_tenant, "stale", 3)  # retention 0 there: kept
    Conversation.objects.for_tenant(tenant).filter(conversation_id="stale").update(updated_at=timezone.now() - timedelta(days=31))
    Conversation.objects.for_tenant(other_tenant).filter(conversation_id="stale").update(
        updated_at=timezone.now() - timedelta(days=400)
    )

    assert services.retention_sweep() == 1

    assert list(Conversation.objects.for_tenant(tenant).values_list("conversation_id", flat=True)) == ["fresh"]
    assert Message.objects.for_tenant(tenant).count() == 3
    assert Conversation.objects.for_tenant(other_tenant).count() == 1


def test_the_retention_sweeper_runs_on_celery_beat(settings):
    assert settings.CELERY_BEAT_SCHEDULE["retention-sweep"]["task"] == "conversations.tasks.retention_sweep"
    from conversations import tasks

    assert tasks.retention_sweep.name == "conversations.tasks.retention_sweep"


def test_clearing_a_history_takes_its_vectors_and_summaries_with_it(api, tenant):
    from search.models import MessageEmbedding
    from summaries.models import Summary

    a_user_with_everything(api, tenant)
    assert api.delete(f"/api/v1/conversations/{USER}-s1/messages/").status_code in (200, 204)
    assert not MessageEmbedding.objects.for_tenant(tenant).filter(conversation__conversation_id=f"{USER}-s1").exists()
    assert not Summary.objects.for_tenant(tenant).filter(conversation__conversation_id=f"{USER}-s1").exists()
    assert Summary.objects.for_tenant(tenant).filter(conversation__conversation_id=f"{USER}-s2").exists()
