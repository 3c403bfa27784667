"""Concurrent appends in one process share broker confirms (``services.PersistGroup``), and keep
every promise of the write path: a return means the payload is in a confirmed, persistent message;
a refused publish fails every appender it carried and leaves nothing in the cache; a payload that
fails in a group is retried on its own."""

import threading
import time
import uuid
from typing import Any

import pytest
from django.test import override_settings

from conversations import services, tasks
from conversations.models import DeadLetter, Message
from conversations.services import publish as publishing
from core.exceptions import ServiceUnavailable
from tests.conftest import run_tasks, take_queued_tasks, wait_for_rows
from tests.conversations.test_faults import cache_keys

CLIENTS = 12


def append_concurrently(tenant: Any, *, prefix: str) -> tuple[list[dict[str, Any]], list[BaseException]]:
    """Each client appends one message to a conversation of its own, all at once."""
    acknowledged: list[dict[str, Any]] = []
    failures: list[BaseException] = []
    start = threading.Barrier(CLIENTS)

    def client(number: int) -> None:
        start.wait()
        try:
            result = services.message_append(
                tenant=tenant, conversation_id=f"{prefix}-{number}", messages=[{"role": "user", "content": f"hello {number}"}]
            )
            assert {message["id"] for message in result.messages} <= CONFIRMED, "returned before its confirm"
            acknowledged.extend(result.messages)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return acknowledged, failures


CONFIRMED: set[str] = set()  # ids of messages in publishes the broker has confirmed


@pytest.fixture
def slow_confirms(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each publish takes 50 ms longer, so appends arriving meanwhile queue up; records group sizes."""
    sizes: list[int] = []
    publish_args = publishing.publish_args
    CONFIRMED.clear()

    def slow(task: Any, *args: Any) -> None:
        time.sleep(0.05)
        payloads = args[0] if task == publishing.MESSAGES_PERSIST_MANY else [args[0]]
        sizes.append(len(payloads))
        publish_args(task, *args)
        CONFIRMED.update(message["id"] for payload in payloads for message in payload["messages"])

    monkeypatch.setattr(publishing, "publish_args", slow)
    return sizes


def test_concurrent_appends_return_only_once_their_payload_is_in_a_persistent_message(tenant, no_worker, slow_confirms):
    acknowledged, failures = append_concurrently(tenant, prefix="group")
    assert failures == []
    assert len(acknowledged) == CLIENTS
    assert max(slow_confirms) > 1, "no appends shared a publish"
    assert len(slow_confirms) < CLIENTS
    queued = take_queued_tasks()
    published = [
        m["id"] for name, payload in queued for p in (payload if isinstance(payload, list) else [payload]) for m in p["messages"]
    ]
    assert sorted(published) == sorted(message["id"] for message in acknowledged)
    run_tasks(queued)
    assert Message.objects.for_tenant(tenant).count() == CLIENTS


def test_a_worker_persists_grouped_payloads(tenant, worker, slow_confirms):
    acknowledged, failures = append_concurrently(tenant, prefix="worked")
    assert failures == []
    assert max(slow_confirms) > 1
    wait_for_rows(Message, tenant, CLIENTS)
    stored = {str(row.message_id): row.seq for row in Message.objects.for_tenant(tenant)}
    assert stored == {message["id"]: message["seq"] for message in acknowledged}


def test_a_refused_group_fails_every_appender_it_carried_and_caches_nothing(
    tenant, refusing_queue, transactional_db, slow_confirms
):
    with override_settings(MEMORY_QUEUE=refusing_queue):
        acknowledged, failures = append_concurrently(tenant, prefix="refused")
    assert acknowledged == []
    assert len(failures) == CLIENTS
    assert all(isinstance(error, ServiceUnavailable) for error in failures)
    assert max(slow_confirms) > 1
    for number in range(CLIENTS):
        assert [key for key in cache_keys(tenant.slug, f"refused-{number}") if not key.endswith((b":state", b":lock"))] == []
    assert not Message.objects.for_tenant(tenant).exists()


def test_a_payload_that_fails_in_a_group_is_dead_lettered_in_place_and_the_others_are_persisted(tenant, no_worker):
    good = services.message_append(tenant=tenant, conversation_id="good", messages=[{"role": "user", "content": "fine"}])
    taken = take_queued_tasks()
    clash = dict(good.messages[0], content="other content", seq=good.messages[0]["seq"] + 1)
    first = {"tenant_id": tenant.pk, "tenant_slug": tenant.slug, "conversation_id": "good", "messages": good.messages}
    run_tasks(taken)  # the original row is stored, so the clash below is a conflict
    other = services.message_append(tenant=tenant, conversation_id="other", messages=[{"role": "user", "content": "also fine"}])
    second = take_queued_tasks()[0][1]
    bad = dict(first, messages=[clash])

    assert tasks.messages_persist_many.apply(args=[[bad, second]]).get() == 1

    assert Message.objects.for_tenant(tenant).filter(message_id=other.messages[0]["id"]).exists()
    # Nothing is published again (a republish the broker refused would leave nothing durable): the
    # conflicting payload is in the dead-letter table, whole.
    assert take_queued_tasks() == []
    assert DeadLetter.objects.for_tenant(tenant).get().payload == bad


def test_appenders_that_wait_too_long_give_up_unpublished_and_the_group_goes_on(tenant, no_worker, monkeypatch):
    publish_args = publishing.publish_args

    def very_slow(task: Any, *args: Any) -> None:
        time.sleep(0.4)  # longer than the appenders wait
        publish_args(task, *args)
        payloads = args[0] if task == publishing.MESSAGES_PERSIST_MANY else [args[0]]
        CONFIRMED.update(message["id"] for payload in payloads for message in payload["messages"])

    monkeypatch.setattr(publishing, "publish_args", very_slow)
    CONFIRMED.clear()
    with override_settings(MEMORY_PUBLISH_WAIT=0.1):
        acknowledged, failures = append_concurrently(tenant, prefix="late")
        assert failures
        assert all(isinstance(error, ServiceUnavailable) for error in failures)
        assert len(acknowledged) + len(failures) == CLIENTS
        later = services.message_append(tenant=tenant, conversation_id="after", messages=[{"role": "user", "content": "on"}])
    published = sorted(
        m["id"]
        for _, payload in take_queued_tasks()
        for p in (payload if isinstance(payload, list) else [payload])
        for m in p["messages"]
    )
    assert published == sorted([*(message["id"] for message in acknowledged), later.messages[0]["id"]])


def test_a_group_whose_confirm_is_lost_answers_each_appender_with_its_own_ids_and_seqs(
    tenant, other_tenant, no_worker, monkeypatch
):
    """Appends of two tenants share a publish whose confirm never comes: each ``write_indeterminate``
    is its own error, and its details name the ids and seqs of that request alone (a shared error
    object would show every appender whichever thread wrote last)."""

    def confirm_lost(task: Any, args: list[Any]) -> None:
        time.sleep(0.05)  # appends arriving meanwhile queue up behind this publish
        try:
            raise TimeoutError("confirm timed out")
        except TimeoutError as error:
            raise publishing._Indeterminate() from error

    monkeypatch.setattr(publishing, "_send_task", confirm_lost)
    tenants = [tenant, other_tenant]
    start = threading.Barrier(CLIENTS)
    sent: dict[int, set[str]] = {}
    errors: dict[int, BaseException] = {}

    def client(number: int) -> None:
        ids = {str(uuid.uuid4()), str(uuid.uuid4())}
        sent[number] = ids
        start.wait()
        try:
            services.message_append(
                tenant=tenants[number % 2],
                conversation_id=f"lost-{number}",
                messages=[{"id": message_id, "role": "user", "content": f"hello {number}"} for message_id in sorted(ids)],
            )
        except BaseException as error:
            errors[number] = error

    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(errors) == list(range(CLIENTS))
    assert len({id(error) for error in errors.values()}) == CLIENTS, "appenders share one error object"
    for number, error in errors.items():
        assert isinstance(error, publishing.PublishIndeterminate)
        assert error.code == "write_indeterminate"
        answered = error.details["messages"]
        assert {message["id"] for message in answered} == sent[number]
        first, second = sorted(message["seq"] for message in answered)
        assert second == first + 1  # its conversation's two seqs, in order
        assert isinstance(error.__cause__, TimeoutError)


def test_own_error_copies_the_error_with_its_cause_and_details_and_keeps_what_cannot_be_copied():
    try:
        try:
            raise TimeoutError("lost")
        except TimeoutError as cause:
            raise ServiceUnavailable("down", code="broker_unavailable", details={"messages": [{"id": "a"}]}) from cause
    except ServiceUnavailable as raised:
        error = raised
    clone = publishing.own_error(error)
    assert clone is not error
    assert type(clone) is ServiceUnavailable
    assert (clone.message, clone.code, clone.retry_after, clone.details) == ("down", "broker_unavailable", 5, error.details)
    assert clone.details is not error.details
    assert clone.details["messages"] is not error.details["messages"]
    assert clone.__cause__ is error.__cause__
    assert clone.__traceback__ is error.__traceback__

    class Odd(Exception):
        def __init__(self, first: str, second: str) -> None:
            super().__init__(f"{first} {second}")

    odd = Odd("a", "b")
    assert publishing.own_error(odd) is odd  # Odd(*args) cannot be rebuilt: given as it is
