"""Acknowledged means persisted (the write path's promises 7, 10 and 11): under a lost ledger, a lost confirm, a
retry in flight, a database that cannot be asked, and a persist task that cannot be stored.

The services run here against the real PostgreSQL, Redis and RabbitMQ; the worker's part is done
in place (``run_queued_tasks``, or a task's ``apply``), step by step."""

import threading
import time
import uuid
from typing import Any

import pytest
from celery.exceptions import Reject
from django.db import DataError, OperationalError
from django.test import override_settings
from django_redis import get_redis_connection

from conversations import cache, services, tasks
from conversations.models import DeadLetter, LedgerEpoch, Message
from conversations.services import append as appending
from conversations.services import ledger
from conversations.services import persist as persisting
from conversations.services import publish as publish_stage
from core.exceptions import Conflict, ServiceUnavailable, Unstorable
from tests.conftest import run_queued_tasks, run_tasks, take_queued_tasks
from tests.conversations.test_api import redis_unreachable


def message(content: str, **extra: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "role": "user", "content": content, **extra}


def append(tenant: Any, conversation_id: str, *messages: dict[str, Any]) -> services.AppendResult:
    return services.message_append(tenant=tenant, conversation_id=conversation_id, messages=list(messages))


def stored(tenant: Any) -> list[tuple[str, int]]:
    rows = Message.objects.for_tenant(tenant).order_by("seq").values_list("message_id", "seq")
    return [(str(message_id), seq) for message_id, seq in rows]


def restart_redis_empty() -> None:
    """Redis loses everything, in a deployment that had a ledger before (its next one replaces it)."""
    LedgerEpoch.objects.get_or_create(since=1)
    get_redis_connection("default").flushdb()


# --- 5.10 Idempotent whatever the cache lost --------------------------------------------------------


def test_a_resend_of_a_pending_id_answers_its_first_seq_and_publishes_nothing(tenant, no_worker):
    first = message("hello")
    acknowledged = append(tenant, "c1", first).messages[0]
    take_queued_tasks()

    again = append(tenant, "c1", first)

    assert again.created is False
    assert again.messages[0]["seq"] == acknowledged["seq"]
    assert take_queued_tasks() == []


def test_after_redis_lost_a_queued_write_its_resend_is_refused_until_it_is_persisted(tenant, no_worker):
    acknowledged = append(tenant, "c1", first := message("acknowledged, still queued")).messages[0]
    queued = take_queued_tasks()
    restart_redis_empty()

    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", first)
    assert refused.value.code == "idempotency_unknown"
    with pytest.raises(ServiceUnavailable):  # a new client id cannot be told apart from a resend either
        append(tenant, "c1", message("new"))
    assert stored(tenant) == []

    run_tasks(queued)  # the queued write is persisted
    again = append(tenant, "c1", first)
    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])
    assert stored(tenant) == [(first["id"], acknowledged["seq"])]


def test_a_write_without_an_id_is_taken_at_once_after_redis_lost_its_ledger(tenant, no_worker):
    restart_redis_empty()

    result = services.message_append(tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "x"}])

    assert result.created is True


def barriers_queued() -> list[tuple[str, Any]]:
    return [task for task in take_queued_tasks() if task[0] == "conversations.tasks.ledger_barrier"]


def run_round(barriers: list[tuple[str, Any]]) -> int:
    """Run a round of barriers from these steps on, each step the one before published; returns how many ran."""
    ran = 0
    while barriers:
        run_tasks(barriers)
        ran += len(barriers)
        barriers = barriers_queued()
    return ran


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The workers a round of barriers finds (their broker connection generations), as a test sets them."""
    present: dict[str, str] = {"worker-1": "connection-1"}
    monkeypatch.setattr(ledger, "worker_inquiry", lambda: ledger.Inquiry(generations=dict(present), held=[]))
    return present


def test_the_ledger_is_whole_again_once_a_round_of_barriers_finds_the_same_workers_throughout(tenant, no_worker, workers):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    barriers = barriers_queued()
    assert len(barriers) == 1

    assert run_round(barriers) == 3  # barrier, second barrier, and the check a slack later
    result = append(tenant, "c1", message("after the round"))

    assert result.created is True


@pytest.fixture
def countdowns(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The countdown of each round step published from now on (the next one runs when a test says)."""
    published: list[float] = []
    step = ledger._barrier_step

    def recorded(*args: Any, countdown: float | None = None) -> None:
        published.append(countdown or 0.0)
        step(*args, countdown=countdown)

    monkeypatch.setattr(ledger, "_barrier_step", recorded)
    return published


def held(monkeypatch: pytest.MonkeyPatch, writes: list[tuple[str, str, list[str]]] | None) -> None:
    """From now on the workers (worker-1, on connection-1) answer that they hold these writes."""
    monkeypatch.setattr(ledger, "worker_inquiry", lambda: ledger.Inquiry(generations={"worker-1": "connection-1"}, held=writes))


def test_with_no_older_write_held_the_round_waits_the_short_slack_only(tenant, no_worker, monkeypatch, countdowns):
    held(monkeypatch, [])
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    young = append(tenant, "c1", {"role": "user", "content": "acknowledged under the new ledger"}).messages[0]
    held(monkeypatch, [(tenant.slug, "c1", [young["id"]])])  # a worker holds it: the ledger does too

    assert run_round(barriers_queued()) == 3
    assert countdowns == [0.0, ledger.LEDGER_SHORT_SLACK_SECONDS]  # not the slack of MEMORY_RETRY_BACKOFF_MAX + 5 s
    assert append(tenant, "c1", message("whole now")).created is True


@pytest.mark.parametrize("answer", ["an older write", "cannot say"])
def test_a_worker_holding_a_write_the_ledger_lost_makes_the_round_wait_the_whole_slack(
    tenant, no_worker, monkeypatch, countdowns, answer
):
    early = message("acknowledged before the loss, held by a worker")
    append(tenant, "c1", early)
    take_queued_tasks()
    restart_redis_empty()
    held(monkeypatch, [(tenant.slug, "c1", [early["id"]])] if answer == "an older write" else None)
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", early)
    run_tasks(barriers_queued())  # the first barrier
    run_tasks(barriers_queued())  # the second: the queue is drained, but a worker holds the write

    slack = ledger.ledger_slack_seconds()
    assert slack - 2 < countdowns[-1] <= slack
    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", early)
    assert refused.value.code == "idempotency_unknown"


def test_a_write_held_by_the_end_of_the_short_slack_makes_the_round_wait_the_whole_slack(
    tenant, no_worker, monkeypatch, countdowns
):
    early = message("on its way into a worker when the round asked")
    append(tenant, "c1", early)
    take_queued_tasks()
    restart_redis_empty()
    held(monkeypatch, [])
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    run_tasks(barriers_queued())
    run_tasks(barriers_queued())
    assert countdowns[-1] == ledger.LEDGER_SHORT_SLACK_SECONDS
    held(monkeypatch, [(tenant.slug, "c1", [early["id"]])])  # it reached a worker meanwhile

    run_tasks(third := barriers_queued())
    assert len(third) == 1
    assert countdowns[-1] > ledger.LEDGER_SHORT_SLACK_SECONDS  # the third step again, at the end of the slack
    assert cache.ledger_status().whole_at is None
    monkeypatch.setattr(ledger, "ledger_slack_seconds", lambda: 0)  # the slack has passed

    assert run_round(barriers_queued()) == 1
    assert cache.ledger_status().whole_at is not None


def test_a_worker_that_reconnected_during_the_round_voids_it(tenant, no_worker, workers):
    # Its broker connection was lost meanwhile: what it held went back to the queue, maybe behind the
    # round's barriers, and a reconnect report may not have come through (Redis paused, say).
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    run_tasks(barriers_queued())  # the first barrier: it finds worker-1 on connection-1
    workers["worker-1"] = "connection-2"

    assert run_round(barriers_queued()) == 1  # the second barrier finds it changed: the round stops
    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", message("still unknown"))
    assert refused.value.code == "idempotency_unknown"

    assert run_round(barriers_queued()) == 3  # the round that append began, with nobody changing
    assert append(tenant, "c1", message("whole now")).created is True


def test_a_worker_gone_during_the_round_voids_it(tenant, no_worker, workers):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    run_tasks(barriers_queued())
    workers.clear()  # killed: its messages went back to the queue

    assert run_round(barriers_queued()) == 1
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("still unknown"))


def test_a_message_handed_back_to_the_broker_during_the_round_voids_it(tenant, no_worker, workers):
    # Delivered before the barrier, then back in the queue behind it (a pool process was lost, or a
    # message held too long was requeued): the round under way proves nothing about it any more.
    acknowledged = append(tenant, "c1", first := message("held by a pool process that is then lost")).messages[0]
    queued = take_queued_tasks()
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    run_tasks(barriers_queued())
    second_step = barriers_queued()
    assert services.ledger_disturbed(why="worker_lost") is True

    assert run_round(second_step) == 1  # no longer current: it stops there
    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", first)
    assert refused.value.code == "idempotency_unknown"
    new_round = barriers_queued()  # begun by that append, behind the handed-back message
    assert len(new_round) == 1

    run_tasks(queued)  # the handed-back message is persisted, then the new round runs
    run_round(new_round)
    again = append(tenant, "c1", first)

    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])
    assert stored(tenant) == [(first["id"], acknowledged["seq"])]


def test_a_round_whose_step_fails_is_begun_again_by_the_next_append(tenant, no_worker, monkeypatch):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))

    def broker_gone() -> ledger.Inquiry:
        raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(ledger, "worker_inquiry", broker_gone)
    assert run_round(barriers_queued()) == 1  # the inquiry failed: the round is void, not left hanging
    assert cache.ledger_status().barrier_at is None

    monkeypatch.setattr(ledger, "worker_inquiry", lambda: ledger.Inquiry(generations={}, held=[]))
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("begins another round"))
    assert run_round(barriers_queued()) == 3
    assert append(tenant, "c1", message("whole now")).created is True


def test_once_the_ledger_is_whole_a_disturbance_changes_nothing(tenant, no_worker, workers):
    restart_redis_empty()
    with pytest.raises(ServiceUnavailable):
        append(tenant, "c1", message("first after the loss"))
    run_round(barriers_queued())
    assert append(tenant, "c1", message("whole now")).created is True
    assert cache.ledger_status().whole_at is not None

    assert services.ledger_disturbed(why="worker_connected") is False
    workers["worker-1"] = "connection-2"
    assert append(tenant, "c2", message("another conversation, first write since")).created is True


def test_the_first_ledger_a_deployment_begins_is_whole_at_once(tenant, no_worker):
    get_redis_connection("default").flushdb()  # a new Redis, in a deployment that never had a ledger
    assert not LedgerEpoch.objects.exists()

    assert append(tenant, "c1", message("first ever")).created is True
    assert LedgerEpoch.objects.count() == 1


@pytest.mark.parametrize("handed_out_by", ["201", "write_indeterminate"])
def test_a_server_id_resent_after_redis_lost_the_first_ledger_is_refused_not_taken_as_new(
    tenant, no_worker, monkeypatch, handed_out_by
):
    """A deployment whose writes so far carried no client id: the ids the service handed out (a 201's,
    or a ``write_indeterminate``'s to resend with) are still known after Redis restarts empty, so the
    resend is refused until the queued write is persisted, then answered with its first seq."""
    get_redis_connection("default").flushdb()  # a new deployment: no ledger in Redis, none in PostgreSQL
    ledger._recorded = False
    assert not LedgerEpoch.objects.exists()
    if handed_out_by == "201":
        acknowledged = services.message_append(
            tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "no id"}]
        ).messages[0]
    else:
        sent = publish_stage._send_task

        def confirm_lost(task: Any, args: list[Any]) -> None:
            sent(task, args)  # the broker has it; its confirm never comes back
            try:
                raise TimeoutError("confirm timed out")
            except TimeoutError as error:
                raise publish_stage._Indeterminate() from error

        monkeypatch.setattr(publish_stage, "_send_task", confirm_lost)
        with pytest.raises(publish_stage.PublishIndeterminate) as indeterminate:
            services.message_append(tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "no id"}])
        monkeypatch.undo()
        acknowledged = indeterminate.value.details["messages"][0]
    queued = take_queued_tasks()
    get_redis_connection("default").flushdb()  # Redis restarts empty; the write is still queued

    resend = {"id": acknowledged["id"], "role": "user", "content": "no id"}
    with pytest.raises(ServiceUnavailable) as refused:
        append(tenant, "c1", resend)
    assert refused.value.code == "idempotency_unknown"
    assert stored(tenant) == []

    run_tasks(queued)
    again = append(tenant, "c1", resend)
    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])
    assert stored(tenant) == [(acknowledged["id"], acknowledged["seq"])]


def test_a_worker_waiting_for_postgresql_puts_its_writes_back_in_a_ledger_redis_lost(tenant, no_worker):
    acknowledged = append(tenant, "c1", first := message("waiting")).messages[0]
    payload = take_queued_tasks()[0][1]
    restart_redis_empty()

    services.messages_reassert_pending(payload=payload)
    again = append(tenant, "c1", first)

    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])


def test_an_in_flight_retry_gets_the_seq_of_the_attempt_still_publishing(tenant, no_worker, monkeypatch):
    """The client gave up on the first attempt (its timeout is shorter than the publish), and its
    retry came while the first still waited for the broker, after the append lock expired."""
    publishing, finish = threading.Event(), threading.Event()
    send = publish_stage._send_task

    def slow_first(task: Any, args: list[Any]) -> None:
        if not publishing.is_set():
            publishing.set()
            finish.wait(10)
        send(task, args)

    monkeypatch.setattr(publish_stage, "_send_task", slow_first)
    first = message("slow")
    answers: list[Any] = []
    with override_settings(MEMORY_APPEND_LOCK_TIMEOUT=0.05):
        attempt = threading.Thread(target=lambda: answers.append(append(tenant, "c1", first)))
        attempt.start()
        publishing.wait(10)
        time.sleep(0.1)  # the first attempt's lock has expired
        retry = append(tenant, "c1", first)
        finish.set()
        attempt.join(10)

    assert retry.messages[0]["seq"] == answers[0].messages[0]["seq"]
    run_queued_tasks()  # both attempts published: one row
    assert stored(tenant) == [(first["id"], retry.messages[0]["seq"])]


def test_the_same_id_with_other_content_is_a_conflict_even_before_it_is_confirmed(tenant, no_worker):
    first = message("one")
    append(tenant, "c1", first)

    with pytest.raises(Conflict):
        append(tenant, "c1", first | {"content": "another"})


def test_with_postgresql_unreachable_a_client_id_redis_does_not_hold_is_refused_not_guessed_new(tenant, no_worker, monkeypatch):
    append(tenant, "c1", message("cached"))
    run_queued_tasks()

    def unreachable(**_: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(appending, "_stored_messages", unreachable)
    with pytest.raises(ServiceUnavailable) as refused:  # a cached list cannot stand in for PostgreSQL
        append(tenant, "c1", message("new while PostgreSQL is down"))
    assert refused.value.code == "idempotency_unknown"
    without_id = services.message_append(tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "x"}])
    assert without_id.created is True  # a write without an id is taken: nothing to tell apart


def test_with_redis_unreachable_a_client_id_postgresql_does_not_hold_is_refused(tenant, no_worker):
    # Acknowledged a moment ago, its persist message may be inside a worker's statement: a queue's
    # count does not show it, so nothing but Redis's ledger could tell it from a new message.
    persisted = append(tenant, "c1", first := message("persisted")).messages[0]
    run_queued_tasks()

    with redis_unreachable():
        with pytest.raises(ServiceUnavailable) as refused:
            append(tenant, "c1", message("unknown while Redis is down"))
        again = append(tenant, "c1", first)
        without_id = services.message_append(tenant=tenant, conversation_id="c1", messages=[{"role": "user", "content": "x"}])

    assert refused.value.code == "idempotency_unknown"
    assert (again.created, again.messages[0]["seq"]) == (False, persisted["seq"])
    assert without_id.created is True


# --- 5.11 An honest 503 ----------------------------------------------------------------------------


def test_a_lost_confirm_is_indeterminate_and_a_resend_with_its_ids_keeps_their_seqs(api, tenant, no_worker, monkeypatch):
    send = publish_stage._send_task

    def sent_then_lost(task: Any, args: list[Any]) -> None:
        send(task, args)  # the broker has it
        raise publish_stage._Indeterminate() from ConnectionResetError("the confirm never came")

    monkeypatch.setattr(publish_stage, "_send_task", sent_then_lost)
    answer = api.post("/api/v1/conversations/c1/messages/", {"role": "user", "content": "maybe"}, format="json")
    monkeypatch.setattr(publish_stage, "_send_task", send)

    assert answer.status_code == 503
    assert answer["Retry-After"]
    error = answer.json()["error"]
    assert error["code"] == "write_indeterminate"
    [assigned] = error["details"]["messages"]
    assert cache.pending(tenant_slug=tenant.slug, conversation_id="c1") == []  # not acknowledged: not in the window

    resent = api.post(
        "/api/v1/conversations/c1/messages/", {"id": assigned["id"], "role": "user", "content": "maybe"}, format="json"
    )
    assert resent.status_code == 200, resent.content
    assert resent.json()["messages"][0]["seq"] == assigned["seq"]
    run_queued_tasks()
    assert stored(tenant) == [(assigned["id"], assigned["seq"])]


def test_a_refused_publish_drops_its_reservation_and_a_resend_is_new(tenant, no_worker, monkeypatch):
    def refused(task: Any, args: list[Any]) -> None:
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(publish_stage, "_send_task", refused)
    first = message("refused")
    with pytest.raises(ServiceUnavailable) as error:
        append(tenant, "c1", first)
    assert error.value.code == "broker_unavailable"
    monkeypatch.undo()

    assert append(tenant, "c1", first).created is True


def test_a_confirm_lost_while_waiting_is_indeterminate_and_a_write_failure_is_not():
    def failing(where: str) -> BaseException:
        def wait() -> None:
            raise ConnectionResetError("reset")

        wait.__code__ = wait.__code__.replace(co_filename="/site-packages/amqp/channel.py", co_name=where)
        try:
            wait()
        except ConnectionResetError as error:
            return error
        raise AssertionError

    assert publish_stage._sent(failing("wait")) is True
    assert publish_stage._sent(failing("_basic_publish")) is False


# --- 5.7 No silent loss ----------------------------------------------------------------------------


def test_a_task_waits_in_place_while_postgresql_is_unreachable_and_persists_when_it_returns(tenant, no_worker, monkeypatch):
    acknowledged = append(tenant, "c1", message("during the outage")).messages[0]
    payload = take_queued_tasks()[0][1]
    outage = {"left": 3}
    persist = persisting.persist_commits.persist

    def down_a_while(payload: dict[str, Any]) -> None:
        if outage["left"]:
            outage["left"] -= 1
            raise OperationalError("connection refused")
        persist(payload)

    monkeypatch.setattr(persisting.persist_commits, "persist", down_a_while)
    monkeypatch.setattr(tasks, "database_answers", lambda: False)
    monkeypatch.setattr(tasks, "_backoff", lambda attempt: 0)
    with override_settings(MEMORY_PERSIST_MAX_RETRIES=0):  # waiting costs no attempt
        tasks.messages_persist.apply(args=[payload])

    assert stored(tenant) == [(acknowledged["id"], acknowledged["seq"])]
    assert take_queued_tasks() == []  # nothing published again
    assert not DeadLetter.unscoped.exists()  # any tenant


def test_a_task_held_too_long_goes_back_to_the_broker_and_is_never_dropped(tenant, no_worker, monkeypatch):
    append(tenant, "c1", message("held"))
    payload = take_queued_tasks()[0][1]

    def unreachable(payload: dict[str, Any]) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(persisting.persist_commits, "persist", unreachable)
    monkeypatch.setattr(tasks, "database_answers", lambda: False)
    monkeypatch.setattr(tasks, "_backoff", lambda attempt: 0.01)
    with override_settings(MEMORY_PERSIST_HOLD=0), pytest.raises(Reject) as rejected:
        tasks.persist_durably(tasks.messages_persist, persisting.persist_commits.persist, payload)

    assert rejected.value.requeue is True
    assert not DeadLetter.unscoped.exists()  # any tenant


def test_a_payload_the_database_refuses_is_dead_lettered_at_once(tenant, no_worker, monkeypatch):
    append(tenant, "c1", message("refused by PostgreSQL"))
    payload = take_queued_tasks()[0][1]
    calls = []

    def refuses(payload: dict[str, Any]) -> None:
        calls.append(payload)
        raise DataError("invalid input syntax for type json")

    monkeypatch.setattr(persisting.persist_commits, "persist", refuses)
    tasks.messages_persist.apply(args=[payload])

    assert len(calls) == 1
    assert DeadLetter.objects.for_tenant(tenant).get().attempts == 1


@pytest.mark.parametrize("poison", ["\x00", "\ud800", float("inf"), float("nan")])
def test_a_dead_letter_is_recorded_whatever_its_payload_holds(tenant, no_worker, poison):
    payload = {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "conversation_id": "c1",
        "messages": [{"id": str(uuid.uuid4()), "seq": 1, "role": "user", "content": "x", "metadata": {"x": poison}}],
    }

    recorded = services.dead_letter_record(task_name=tasks.messages_persist.name, payload=payload, error="refused", attempts=1)

    recorded.refresh_from_db()
    assert recorded.tenant_id == tenant.pk
    assert recorded.payload["conversation_id"] == "c1"
    assert "json" in recorded.payload
    with pytest.raises(Conflict):
        services.dead_letter_replay(dead_letter=recorded)


@pytest.mark.parametrize(
    "hostile",
    [
        {"metadata": {"x": float("inf")}},
        {"metadata": {"x": float("nan")}},
        {"content": "nul \x00"},
        {"content": "half \ud800 a pair"},
        {"metadata": {"\x00key": 1}},
    ],
)
def test_an_unstorable_append_is_refused_before_anything_is_written(tenant, no_worker, hostile):
    with pytest.raises(Unstorable):
        append(tenant, "c1", message("x") | hostile)

    assert take_queued_tasks() == []
    assert list(get_redis_connection("default").scan_iter(match=f"{tenant.slug}:c1:*")) == []


def test_resent_metadata_that_postgresql_gives_back_as_another_number_is_the_same_message(tenant, no_worker):
    first = message("big number", metadata={"x": 1e23, "y": 2.5})
    acknowledged = append(tenant, "c1", first).messages[0]
    run_queued_tasks()
    get_redis_connection("default").delete(cache.message_key(tenant.slug, "c1", first["id"]))

    again = append(tenant, "c1", first)

    assert (again.created, again.messages[0]["seq"]) == (False, acknowledged["seq"])
