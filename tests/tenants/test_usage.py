"""A tenant's usage per UTC day: what is counted, what is measured from the rows, who may see it.

Searches and chat runs are counted once each as they are answered, with the model's tokens; the
extractor's tokens are read from its own count; messages and storage come from the rows, for a day
the beat rolled up and for one it never did; the API and the admin show a tenant its own usage only.
"""

import re
import threading
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, connections, transaction

from checkpoints.models import Checkpoint, CheckpointWrite
from conversations.models import Conversation, Message
from extraction.models import ExtractionUsage
from mcp_server import tools as mcp_tools
from store.models import StoreItem
from tenants import services as tenant_services
from tenants import tasks, usage
from tenants.admin import usage_section
from tenants.models import Tenant, TenantUsage
from tests.chat.openai_server import USAGE, OpenAICompatibleServer
from tests.factories import conversation_with_messages
from tests.faults import wait_until

USAGE_URL = "/api/v1/usage/"
TENANTS = "/admin/tenants/tenant/"


def days_ago(count: int) -> Any:
    return usage.today() - timedelta(days=count)


def noon(day: Any) -> datetime:
    return datetime.combine(day, time(12), tzinfo=UTC)


def born(tenant: Tenant, days: int) -> None:
    """The tenant as if created ``days`` ago: its earlier days are measured too."""
    Tenant.objects.filter(pk=tenant.pk).update(created_at=noon(days_ago(days)))
    tenant.refresh_from_db()


def stored_on(tenant: Tenant, conversation_id: str, count: int, day: Any) -> Conversation:
    """A conversation of ``count`` messages stored (and created) on ``day``."""
    conversation = conversation_with_messages(tenant, conversation_id, count)
    Message.objects.for_tenant(tenant).filter(conversation=conversation).update(persisted_at=noon(day), created_at=noon(day))
    Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).update(created_at=noon(day))
    return conversation


def row_bytes(tenant: Tenant, *conversations: Conversation) -> int:
    """The size PostgreSQL gives those conversations' rows and their messages' rows."""
    ids = [conversation.pk for conversation in conversations]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(pg_column_size(m.*)), 0) FROM conversation_messages m"
            "        WHERE m.tenant_id = %s AND m.conversation_id = ANY(%s))"
            " + (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM conversation_memories c WHERE c.id = ANY(%s))",
            [tenant.pk, ids, ids],
        )
        return int(cursor.fetchone()[0])


def by_day(answer: list[usage.UsageDay]) -> dict[Any, usage.UsageDay]:
    return {entry.day: entry for entry in answer}


# --- Counted as they happen -------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_search_answered_counts_once_and_a_refused_one_not_at_all(api: Any, tenant: Tenant) -> None:
    conversation_with_messages(tenant, "s1", 4)

    for words in ("message", "sentence"):
        assert api.get("/api/v1/conversations/s1/search/", {"q": words, "mode": "keyword"}).status_code == 200
    assert api.post("/api/v1/users/nobody/search/", {"q": "message", "mode": "keyword"}, format="json").status_code == 200
    assert api.get("/api/v1/conversations/s1/search/", {"q": "x", "top_k": 0}).status_code == 400
    mcp_tools.search_memory(tenant=tenant, query="message", conversation_id="s1", mode="keyword")  # the MCP tool's too

    (row,) = TenantUsage.objects.for_tenant(tenant)
    assert (row.day, row.searches, row.chat_runs, row.model_tokens) == (usage.today(), 4, 0, 0)
    assert api.get(USAGE_URL).json()["usage"][0]["searches"] == 4


@pytest.fixture
def model_server(settings: Any) -> Any:
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the stand-in model server listens on loopback
    server = OpenAICompatibleServer().start()
    yield server
    server.stop()


@pytest.mark.django_db
def test_a_chat_run_counts_once_with_the_tokens_the_model_server_reported(api: Any, tenant: Tenant, model_server: Any) -> None:
    tenant_services.tenant_update(
        tenant=tenant, settings={"MEMORY_CHAT_MODEL": "openai:stub-echo", "MEMORY_CHAT_BASE_URL": model_server.base_url}
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-tenant-secret-0001")
    body = {"content": "Hello", "message_id": "018f6f7e-0000-7000-8000-000000000001"}

    answered = api.post("/api/v1/conversations/c1/chat/", body, format="json")
    replayed = api.post("/api/v1/conversations/c1/chat/", body, format="json")  # the stored answer, no model call
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, "MEMORY_CHAT_MODEL": "openai:stub-fail"})
    failed = api.post("/api/v1/conversations/c1/chat/", {"content": "Again"}, format="json")

    assert (answered.status_code, replayed.status_code, failed.status_code) == (201, 200, 502)
    assert answered.json()["usage"]["total_tokens"] == USAGE["total_tokens"]
    (row,) = TenantUsage.objects.for_tenant(tenant)
    assert (row.chat_runs, row.model_tokens, row.searches) == (1, USAGE["prompt_tokens"] + USAGE["completion_tokens"], 0)


@pytest.mark.django_db
def test_the_extractors_tokens_are_read_from_its_own_count_and_counted_once(tenant: Tenant) -> None:
    ExtractionUsage.objects.for_tenant(tenant).create(tenant=tenant, day=usage.today(), calls=2, tokens=500)
    usage.usage_record(tenant=tenant, chat_runs=1, model_tokens=28)

    (today, *_) = usage.usage_days(tenant=tenant, days=3)
    again = usage.usage_days(tenant=tenant, days=3)[0]

    assert today.model_tokens == again.model_tokens == 528
    assert TenantUsage.objects.for_tenant(tenant).get(day=usage.today()).model_tokens == 28  # never copied in


@pytest.mark.django_db
def test_nothing_to_count_writes_nothing_and_an_odd_token_count_is_not_a_number(tenant: Tenant) -> None:
    usage.usage_record(tenant=tenant)
    usage.usage_record(tenant=tenant, model_tokens=None)  # type: ignore[arg-type] - a provider's usage may hold anything
    usage.usage_record(tenant=tenant, chat_runs=1, model_tokens=float("nan"))

    (row,) = TenantUsage.objects.for_tenant(tenant)
    assert (row.chat_runs, row.model_tokens) == (1, 0)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_first_counts_of_the_day_lose_nothing(tenant: Tenant) -> None:
    """The first count holds the day's new row uncommitted; the second, on its own connection, waits
    for it at the unique index and then adds to it, rather than losing its count or failing."""
    recorded, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                usage.usage_record(tenant=tenant, searches=1, model_tokens=10)
                recorded.set()
                assert release.wait(20)
        except BaseException as error:  # noqa: BLE001 - shown by the test
            errors.append(error)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            usage.usage_record(tenant=tenant, searches=1, model_tokens=5)
        except BaseException as error:  # noqa: BLE001 - shown by the test
            errors.append(error)
        finally:
            connections.close_all()

    one = threading.Thread(target=first)
    one.start()
    assert recorded.wait(20)
    two = threading.Thread(target=second)
    two.start()

    def second_waits_on_the_first() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO tenant_usage%%'"
            )
            return cursor.fetchone()[0] == 1

    wait_until(second_waits_on_the_first, timeout=20, message="the second count waiting for the first's row")
    release.set()
    one.join(20)
    two.join(20)

    assert errors == []
    row = TenantUsage.objects.for_tenant(tenant).get(day=usage.today())
    assert (row.searches, row.model_tokens) == (2, 15)


@pytest.mark.django_db(transaction=True)
def test_many_concurrent_counts_each_on_its_own_connection_all_add_up(tenant: Tenant) -> None:
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def counting() -> None:
        try:
            start.wait(20)
            for _ in range(25):
                usage.usage_record(tenant=tenant, searches=1)
        except BaseException as error:  # noqa: BLE001 - shown by the test
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=counting) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == []
    assert TenantUsage.objects.for_tenant(tenant).get().searches == 100


# --- Measured from the rows -------------------------------------------------------------------------


@pytest.mark.django_db
def test_messages_and_storage_of_a_day_never_rolled_up_are_measured_from_the_rows_and_stored(tenant: Tenant) -> None:
    born(tenant, 6)
    earlier = stored_on(tenant, "earlier", 3, days_ago(3))
    usage.usage_record(tenant=tenant, searches=4)  # today's row exists, not rolled up
    today_conversation = conversation_with_messages(tenant, "today", 2)

    answer = by_day(usage.usage_days(tenant=tenant, days=7))

    assert [answer[days_ago(n)].messages for n in range(7)] == [2, 0, 0, 3, 0, 0, 0]
    assert answer[days_ago(4)].storage_bytes == 0
    assert answer[days_ago(3)].storage_bytes == answer[days_ago(1)].storage_bytes > 0
    # PostgreSQL's size of each row, as stored (a row read through another plan may differ by a few bytes).
    assert answer[days_ago(3)].storage_bytes == pytest.approx(row_bytes(tenant, earlier), rel=0.02)
    assert answer[usage.today()].storage_bytes == pytest.approx(row_bytes(tenant, earlier, today_conversation), rel=0.02)
    assert answer[usage.today()].storage_bytes > answer[days_ago(1)].storage_bytes
    assert answer[usage.today()].searches == 4
    assert [answer[days_ago(n)].complete for n in (0, 1)] == [False, True]
    rolled = TenantUsage.objects.for_tenant(tenant).filter(rolled_up_at__isnull=False)
    assert sorted(row.day for row in rolled) == [days_ago(n) for n in range(6, 0, -1)]  # since the tenant was created

    # Stored: a day measured is what it was, even once its messages are gone.
    Message.objects.for_tenant(tenant).filter(conversation=earlier).delete()
    assert by_day(usage.usage_days(tenant=tenant, days=7))[days_ago(3)].messages == 3


@pytest.mark.django_db
def test_storage_counts_what_every_app_stores_for_the_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    conversation = conversation_with_messages(tenant, "c1", 1)
    before = usage.usage_days(tenant=tenant, days=1)[0].storage_bytes
    text = "x" * 3000  # PostgreSQL may compress it: the row's size as stored is what counts
    StoreItem.objects.for_tenant(tenant).create(tenant=tenant, namespace=["notes"], key="k", value={"text": text})
    checkpoint = Checkpoint.objects.for_tenant(tenant).create(
        tenant=tenant, conversation=conversation, checkpoint_id="1", state={"text": text}
    )
    CheckpointWrite.objects.for_tenant(tenant).create(
        tenant=tenant, checkpoint=checkpoint, task_id="t", idx=0, channel="notes", value={"text": text}
    )
    StoreItem.objects.for_tenant(other_tenant).create(tenant=other_tenant, namespace=["notes"], key="k", value={"text": text})

    after = usage.usage_days(tenant=tenant, days=1)[0].storage_bytes

    assert set(usage.STORAGE_MEASURES) == {
        "messages",
        "conversations",
        "embeddings",
        "summaries",
        "facts",
        "fact_changes",
        "store",
        "checkpoints",
        "checkpoint_writes",
        "memories",
        "memory_changes",
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT sum(pg_column_size(s.*)) FROM store_items s WHERE s.tenant_id = %s)"
            " + (SELECT sum(pg_column_size(c.*)) FROM checkpoints_checkpoint c WHERE c.tenant_id = %s)"
            " + (SELECT sum(pg_column_size(w.*)) FROM checkpoints_checkpointwrite w WHERE w.tenant_id = %s)",
            [tenant.pk] * 3,
        )
        added = int(cursor.fetchone()[0])
    assert after - before == pytest.approx(added, rel=0.05)  # globex's item is not acme's storage


@pytest.mark.django_db
def test_the_beat_rolls_up_yesterday_once_for_every_tenant_that_existed(tenant: Tenant, other_tenant: Tenant) -> None:
    born(tenant, 2)
    born(other_tenant, 2)
    stored_on(tenant, "yesterday", 5, days_ago(1))
    stored_on(other_tenant, "theirs", 2, days_ago(1))
    newcomer = Tenant.objects.create(slug="initech", name="Initech")  # created today: nothing to roll up

    first, second = tasks.usage_rollup_due(), tasks.usage_rollup_due()

    assert settings.CELERY_BEAT_SCHEDULE["usage-rollup"]["task"] == tasks.usage_rollup_due.name
    assert (first, second) == (2, 0)
    assert TenantUsage.objects.for_tenant(tenant).get(day=days_ago(1)).messages == 5
    assert TenantUsage.objects.for_tenant(other_tenant).get(day=days_ago(1)).messages == 2
    assert not TenantUsage.objects.for_tenant(newcomer).exists()


@pytest.mark.django_db
def test_a_rollup_keeps_the_counted_events_of_its_day(tenant: Tenant) -> None:
    born(tenant, 2)
    stored_on(tenant, "yesterday", 1, days_ago(1))
    TenantUsage.objects.for_tenant(tenant).create(tenant=tenant, day=days_ago(1), searches=7, chat_runs=2, model_tokens=90)

    usage.usage_rollup(tenant=tenant, days=[days_ago(1)])

    row = TenantUsage.objects.for_tenant(tenant).get(day=days_ago(1))
    assert (row.messages, row.searches, row.chat_runs, row.model_tokens) == (1, 7, 2, 90)
    assert row.rolled_up_at is not None


# --- The API ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_measures_a_day_never_rolled_up_from_the_rows(api: Any, tenant: Tenant) -> None:
    born(tenant, 4)
    stored_on(tenant, "earlier", 3, days_ago(2))

    answer = api.get(USAGE_URL, {"days": 5}).json()

    assert [entry["messages"] for entry in answer["usage"]] == [0, 0, 3, 0, 0]
    assert answer["usage"][2]["storage_bytes"] == answer["usage"][0]["storage_bytes"] > 0
    assert TenantUsage.objects.for_tenant(tenant).get(day=days_ago(2)).messages == 3  # stored


@pytest.mark.django_db
def test_each_key_sees_its_own_tenants_usage_and_never_the_others(
    api: Any, other_api: Any, tenant: Tenant, other_tenant: Tenant
) -> None:
    usage.usage_record(tenant=tenant, searches=2, chat_runs=1, model_tokens=30)
    usage.usage_record(tenant=other_tenant, searches=5)
    conversation_with_messages(other_tenant, "theirs", 6)

    mine, theirs = api.get(USAGE_URL).json(), other_api.get(USAGE_URL).json()

    assert (mine["tenant"], mine["days"], len(mine["usage"])) == ("acme", 30, 30)
    assert mine["usage"][0] == {
        "day": usage.today().isoformat(),
        "messages": 0,
        "searches": 2,
        "chat_runs": 1,
        "model_tokens": 30,
        "storage_bytes": 0,
        "complete": False,
    }
    assert mine["usage"][1]["day"] == days_ago(1).isoformat()  # newest first
    assert mine["totals"] == {"messages": 0, "searches": 2, "chat_runs": 1, "model_tokens": 30}
    assert theirs["tenant"] == "globex"
    assert (theirs["usage"][0]["searches"], theirs["usage"][0]["messages"]) == (5, 6)
    assert theirs["usage"][0]["storage_bytes"] > 0
    assert api.get(USAGE_URL, {"days": 1}).json()["days"] == 1
    assert len(api.get(USAGE_URL, {"days": 366}).json()["usage"]) == 366


@pytest.mark.django_db
@pytest.mark.parametrize("days", ["0", "367", "-1", "thirty", "1.5"])
def test_a_bad_days_is_a_400_naming_it_and_writes_nothing(api: Any, tenant: Tenant, days: str) -> None:
    born(tenant, 10)  # days the answer would otherwise measure and store

    response = api.get(USAGE_URL, {"days": days})

    assert response.status_code == 400
    assert "days" in response.json()["error"]["details"], response.json()
    assert not TenantUsage.unscoped.exists()  # every tenant's rows: nothing at all was written


def test_the_usage_endpoint_needs_a_key(client: Any, db: Any) -> None:
    assert client.get(USAGE_URL).status_code in (401, 403)


# --- The admin --------------------------------------------------------------------------------------


@pytest.fixture
def busy_tenants(tenant: Tenant, other_tenant: Tenant) -> None:
    born(tenant, 3)
    stored_on(tenant, "earlier", 3, days_ago(2))
    usage.usage_record(tenant=tenant, searches=11)
    usage.usage_record(tenant=other_tenant, searches=222_222)


@pytest.mark.django_db
def test_a_superuser_sees_any_tenants_usage_table_and_charts(
    client: Any, tenant: Tenant, other_tenant: Tenant, busy_tenants: None
) -> None:
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-password-1"))

    page = client.get(f"{TENANTS}{tenant.pk}/change/").content.decode()
    theirs = client.get(f"{TENANTS}{other_tenant.pk}/change/").content.decode()

    assert 'class="memory-usage__table"' in page
    assert page.count('class="memory-chart memory-chart--bars"') == 5
    assert page.count('<rect class="memory-chart__bar"') == 5 * 30
    assert f'<time datetime="{days_ago(2).isoformat()}">' in page
    assert "memory/usage.css" in page
    assert "222,222" in theirs
    assert "222,222" not in page


@pytest.mark.django_db
def test_an_operator_sees_the_usage_of_their_tenant_only(
    operator_client: Any, tenant: Tenant, other_tenant: Tenant, busy_tenants: None
) -> None:
    page = operator_client.get(f"{TENANTS}{tenant.pk}/change/")
    theirs = operator_client.get(f"{TENANTS}{other_tenant.pk}/change/")

    assert page.status_code == 200
    assert 'class="memory-usage__table"' in page.content.decode()
    assert "<td>11</td>" in page.content.decode()
    assert theirs.status_code == 404
    assert "222,222" not in theirs.content.decode()


@pytest.mark.django_db
def test_usage_the_database_cannot_read_is_said_on_a_page_that_still_opens(
    operator_client: Any, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(**kwargs: Any) -> list[usage.UsageDay]:
        raise DatabaseError("connection lost")

    monkeypatch.setattr(usage, "usage_days", unreadable)

    page = operator_client.get(f"{TENANTS}{tenant.pk}/change/")

    assert page.status_code == 200
    assert "Usage could not be read: PostgreSQL did not answer." in page.content.decode()
    assert "Settings in effect" in page.content.decode()


def test_the_storage_column_and_its_chart_read_in_one_unit_the_largest_days() -> None:
    days = [
        usage.UsageDay(
            day=usage.today() - timedelta(days=n),
            messages=0,
            searches=0,
            chat_runs=0,
            model_tokens=0,
            storage_bytes=size,
            complete=n > 0,
        )
        for n, size in enumerate([428_231, 300_000, 1_200])
    ]

    html = usage_section(days)

    cells = re.findall(r'<td title="[\d,]+ bytes">([^<]+)</td>', html)
    assert cells == ["428 kB", "300 kB", "1.2 kB"]
    assert '<strong class="memory-chart__value">428 kB</strong>' in html  # today's level, as in the table
    assert "MB" not in html
    assert "KB" not in html
