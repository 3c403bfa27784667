"""The summary task: run in place (retries, missing rows), and by real worker processes after
messages appended through the API are persisted."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError
from structlog.testing import capture_logs

from memoryproject.celery import app as celery_app
from summaries import services, tasks
from summaries.models import Summary
from tests.conftest import take_queued_tasks, wait_for_rows
from tests.faults import CeleryWorker
from tests.summaries import fakes
from tests.summaries.conftest import pairs, store

TASK = "summaries.tasks.conversation_summarize"


def test_the_task_writes_the_due_summary_and_answers_its_id(tenant):
    store(tenant, "c1", pairs(1, 10))

    result = tasks.conversation_summarize.apply(args=[tenant.pk, "c1"])

    assert result.get() == Summary.objects.for_tenant(tenant).get().pk
    assert tasks.conversation_summarize.apply(args=[tenant.pk, "c1"]).get() is None
    assert Summary.objects.for_tenant(tenant).count() == 1


def test_a_missing_tenant_or_conversation_is_not_an_error(tenant):
    assert tasks.conversation_summarize.apply(args=[tenant.pk + 1000, "c1"]).get() is None
    assert tasks.conversation_summarize.apply(args=[tenant.pk, "erased"]).get() is None


def test_a_transient_database_error_is_retried(tenant, monkeypatch):
    store(tenant, "c1", pairs(1, 10))
    summarize = services.conversation_summarize
    attempts: list[int] = []

    def unreachable_twice(**kwargs: Any) -> Any:
        attempts.append(1)
        if len(attempts) <= 2:
            raise OperationalError("server closed the connection unexpectedly")
        return summarize(**kwargs)

    monkeypatch.setattr(services, "conversation_summarize", unreachable_twice)

    result = tasks.conversation_summarize.apply(args=[tenant.pk, "c1"])

    assert len(attempts) == 3
    assert result.get() == Summary.objects.for_tenant(tenant).get().pk


def test_retries_stop_after_their_bound_with_an_error_logged(tenant, monkeypatch):
    attempts: list[int] = []

    def unreachable(**kwargs: Any) -> Any:
        attempts.append(1)
        raise OperationalError("connection refused")

    monkeypatch.setattr(services, "conversation_summarize", unreachable)

    with capture_logs() as logs:
        result = tasks.conversation_summarize.apply(args=[tenant.pk, "c1"])

    assert result.get() is None
    assert len(attempts) == tasks.MAX_RETRIES + 1
    assert [entry["log_level"] for entry in logs if entry["event"] == "summary_abandoned"] == ["error"]


def test_the_task_is_registered_under_the_name_the_persist_path_publishes():
    registered = celery_app.tasks[TASK]

    assert registered.run.__module__ == "summaries.tasks"
    assert registered.acks_late is True


def test_a_published_task_waits_on_the_derived_queue_with_its_arguments(tenant):
    celery_app.send_task(TASK, args=[tenant.pk, "c1"], queue=settings.MEMORY_DERIVED_QUEUE)

    assert take_queued_tasks(queue=settings.MEMORY_DERIVED_QUEUE) == [(TASK, [tenant.pk, "c1"])]


# --- Real workers -------------------------------------------------------------------------------------------


@pytest.fixture
def tenant_with_the_fake_model(tenant: Any) -> Any:
    """acme summarises with the deployment's model, the recording fake in the derived worker's
    environment (a model named as code is the deployment's to configure, never a tenant's)."""
    tenant.settings = {"MEMORY_EMBEDDING_MODEL": ""}
    tenant.save()
    return tenant


@pytest.fixture
def derived_worker(worker_env: dict[str, str], transactional_db: Any) -> Iterator[CeleryWorker]:
    """A derived-queue worker of a deployment whose summary model is the recording fake."""
    worker = CeleryWorker(
        env={**worker_env, "MEMORY_SUMMARY_MODEL": fakes.SPEC}, name="derived", queue_variable="MEMORY_DERIVED_QUEUE"
    )
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.mark.worker
def test_a_real_worker_on_the_derived_queue_writes_a_published_summary(tenant_with_the_fake_model, derived_worker):
    tenant = tenant_with_the_fake_model
    store(tenant, "c1", pairs(1, 10))

    celery_app.send_task(TASK, args=[tenant.pk, "c1"], queue=settings.MEMORY_DERIVED_QUEUE)

    wait_for_rows(Summary, tenant, 1, timeout=60)
    summary = Summary.objects.for_tenant(tenant).get()
    assert (summary.pair_count, summary.model, summary.first_seq, summary.last_seq) == (10, fakes.MODEL_NAME, 9, 20)


@pytest.mark.worker
def test_the_tenth_pair_appended_through_the_api_gets_summarised_by_the_workers(
    api, tenant_with_the_fake_model, worker, derived_worker
):
    tenant = tenant_with_the_fake_model
    url = "/api/v1/conversations/trip/messages/"
    for number in range(1, 10):
        answer = api.post(
            url, {"messages": [{"role": role, "content": text} for role, text in pairs(number, number)]}, format="json"
        )
        assert answer.status_code == 201, answer.content
    answer = api.post(url, {"messages": [{"role": "user", "content": "question 10"}]}, format="json")
    assert answer.status_code == 201, answer.content
    answer = api.post(url, {"messages": [{"role": "assistant", "content": "answer 10"}]}, format="json")
    assert answer.status_code == 201, answer.content

    wait_for_rows(Summary, tenant, 1, timeout=90)
    summary = Summary.objects.for_tenant(tenant).get()
    assert (summary.pair_count, summary.message_count, summary.model) == (10, 12, fakes.MODEL_NAME)
    assert summary.text.startswith("- The user is planning a trip to Lisbon")
    listed = api.get("/api/v1/conversations/trip/summaries/").json()["summaries"]
    assert [item["last_seq"] for item in listed] == [summary.last_seq]
