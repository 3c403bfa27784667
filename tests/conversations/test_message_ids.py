"""Message ids that carry their time (UUIDv7): the service's own ids are made so, one stamped ahead of
the service's clock is refused, and after Redis lost its ledger one made after the new ledger began is
taken as new without waiting for the round of barriers, while every id that may be older still waits
(promise 10 unchanged).

Against the real PostgreSQL, Redis and RabbitMQ; the worker's part is done in place."""

import re
import time
import uuid
from typing import Any

import pytest
from django.test import override_settings
from django_redis import get_redis_connection

from conversations import cache, services
from conversations.models import Message
from conversations.services import ledger, message_ids
from core.exceptions import ClockSkew, ServiceUnavailable
from tests.conftest import run_tasks, take_queued_tasks
from tests.conversations.test_acknowledged import append, barriers_queued, restart_redis_empty, run_round, stored


def uuid7_at(ms: int) -> str:
    """A UUIDv7 stamped ``ms`` (Unix milliseconds)."""
    return message_ids.new_message_id(at_ms=ms)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def message_with(message_id: str, content: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def ledger_began_seconds_ago(seconds: float) -> None:
    """Move the ledger's start back, as if Redis had lost the old one ``seconds`` ago."""
    connection = get_redis_connection("default")
    since = cache.ledger_status().since
    connection.hset(cache.LEDGER_KEY, "since", since - int(seconds * 1_000_000))


# --- the service's own ids -----------------------------------------------------------------------


def test_the_service_makes_uuid7_ids_stamped_now(tenant, no_worker):
    before = now_ms()
    made = services.message_append(tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "x"}])
    after = now_ms()

    made_id = uuid.UUID(made.messages[0]["id"])
    assert (made_id.version, made_id.variant) == (7, uuid.RFC_4122)
    assert before <= message_ids.stamped_ms(made_id) <= after


def test_ids_made_in_a_row_are_distinct_and_carry_no_stamp_but_theirs():
    made = {message_ids.new_message_id() for _ in range(10_000)}

    assert len(made) == 10_000
    assert message_ids.stamped_ms(str(uuid.uuid4())) is None
    assert message_ids.stamped_ms(str(uuid.uuid5(uuid.NAMESPACE_URL, "x"))) is None
    assert message_ids.stamped_ms("not a uuid") is None


# --- an id stamped ahead of the service's clock --------------------------------------------------


def test_an_id_stamped_further_ahead_than_the_skew_allows_is_refused_with_nothing_written(tenant, no_worker):
    ahead = uuid7_at(now_ms() + 60_000)

    with pytest.raises(ClockSkew) as refused:
        append(tenant, "c1", message_with(uuid7_at(now_ms()), "fine"), message_with(ahead, "from a fast clock"))

    assert refused.value.status == 400
    assert refused.value.details["field"] == "messages[1].id"
    assert refused.value.details["limit_seconds"] == 10
    assert 59 < refused.value.details["ahead_seconds"] <= 60
    assert "clock" in refused.value.message
    assert take_queued_tasks() == []
    assert cache.window(tenant_slug=tenant.slug, conversation_id="c1", count=10) is None


def test_an_id_stamped_ahead_within_the_skew_is_taken(tenant, no_worker):
    result = append(tenant, "c1", message_with(uuid7_at(now_ms() + 8_000), "a clock a little fast"))

    assert result.created is True


@override_settings(MEMORY_MESSAGE_ID_CLOCK_SKEW=60)
def test_the_skew_allowed_is_a_setting(tenant, no_worker):
    assert append(tenant, "c1", message_with(uuid7_at(now_ms() + 30_000), "x")).created is True


def test_the_api_answers_clock_skew_naming_the_id(api, no_worker):
    ahead = uuid7_at(now_ms() + 3_600_000)

    response = api.post("/api/v1/conversations/c1/messages/", {"id": ahead, "role": "user", "content": "x"}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "clock_skew"
    assert re.search(r"stamped 3,[56]\d\d\.\d s ahead of the service's clock, more than the 10 s", error["message"])
    assert error["details"]["field"] == "id"
    assert error["details"]["id"] == ahead
    assert api.get("/api/v1/conversations/c1/window/").status_code == 404  # not even begun


# --- after Redis lost its ledger -----------------------------------------------------------------


def test_after_a_redis_loss_an_id_made_after_the_ledger_began_is_new_at_once(tenant, no_worker):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):  # begins the ledger (and its round)
        append(tenant, "c1", message_with(str(uuid.uuid4()), "a UUIDv4 waits for the round"))
    ledger_began_seconds_ago(12)

    young = message_with(message_ids.new_message_id(), "made 12 s after the ledger began")
    result = append(tenant, "c1", young)

    assert result.created is True
    with pytest.raises(ServiceUnavailable) as refused:  # the round is still under way: a UUIDv4 still waits
        append(tenant, "c1", message_with(str(uuid.uuid4()), "no stamp"))
    assert refused.value.code == "idempotency_unknown"
    again = append(tenant, "c1", young)  # and the young one's resend is answered from the ledger
    assert (again.created, again.messages[0]["seq"]) == (False, result.messages[0]["seq"])


def test_after_a_redis_loss_an_id_made_within_the_margin_of_the_ledger_still_waits(tenant, no_worker):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message_with(str(uuid.uuid4()), "begins the ledger"))
    ledger_began_seconds_ago(10.5)  # the skew allowed (10 s) and the hosts' second are not past yet

    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", message_with(message_ids.new_message_id(), "maybe acknowledged before, by a fast clock"))

    assert refused.value.code == "idempotency_unknown"


def test_a_write_stamped_ahead_and_acknowledged_before_the_loss_is_never_taken_again(tenant, no_worker):
    # The worst case the skew allows: acknowledged just before Redis lost its ledger, stamped 9.9 s
    # ahead. Its resend must wait for the round, whatever the time: it is on its way to PostgreSQL.
    early = message_with(uuid7_at(now_ms() + 9_900), "from a clock 9.9 s fast")
    acknowledged = append(tenant, "c1", early).messages[0]
    queued = take_queued_tasks()
    restart_redis_empty()

    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", early)
    assert refused.value.code == "idempotency_unknown"
    assert stored(tenant) == []

    run_tasks(queued)
    again = append(tenant, "c1", early)
    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])
    assert Message.objects.for_tenant(tenant).count() == 1


def test_a_batch_with_one_id_that_may_be_older_waits_whole(tenant, no_worker):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message_with(str(uuid.uuid4()), "begins the ledger"))
    ledger_began_seconds_ago(12)

    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message_with(message_ids.new_message_id(), "young"), message_with(str(uuid.uuid4()), "v4"))

    assert [name for name, _ in take_queued_tasks() if name != "conversations.tasks.ledger_barrier"] == []


def test_once_the_round_completes_every_id_is_new_again(tenant, no_worker, monkeypatch):
    monkeypatch.setattr(ledger, "worker_inquiry", lambda: ledger.Inquiry(generations={"worker-1": "connection-1"}, held=[]))
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message_with(message_ids.new_message_id(), "made as the ledger began"))
    assert run_round(barriers_queued()) == 3

    assert append(tenant, "c1", message_with(str(uuid.uuid4()), "whole now")).created is True
