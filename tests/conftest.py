"""Shared fixtures: tenants with API clients, the test Redis database, the broker queue, and a real
Celery worker process for integration tests.

The tests use the machine's PostgreSQL (a test database), Redis (database 9, flushed before each
test) and RabbitMQ (the queue ``memory-test``, purged before each test and deleted at the end).
"""

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django_redis import get_redis_connection
from kombu.transport.native_delayed_delivery import (
    MAX_NUMBER_OF_BITS_TO_USE,
    bind_queue_to_native_delayed_delivery_exchange,
    declare_native_delayed_delivery_exchanges_and_queues,
    level_name,
)
from rest_framework.test import APIClient

from conversations import services
from conversations.services import rebuild as rebuilding
from memoryproject.celery import app as celery_app
from tenants import services as tenant_services
from tests.factories import TenantFactory
from tests.faults import CeleryWorker, wait_until

# What a skipped test needs, and how to get it: told at the end of a run that skipped some (after
# pytest's own list of skips and their reasons). A skip is matched by its test file or its reason.
HOW_TO_RUN_SKIPPED = (
    (
        "tests/conversations/test_admin_browser.py",
        "the admin's browser tests need Debian's chromium and its chromedriver: "
        "apt-get install chromium chromium-driver (or run .ci/run, which installs them), then make test",
    ),
    (
        "requirements-torch.txt",
        "the tests of the optional torch build of the embedding model need the torch extra: "
        "make torch (pip install -r requirements-torch.txt, with torch's CPU build), then make test",
    ),
    ("rabbitmq-server", "the torture harness starts a private RabbitMQ node: apt-get install rabbitmq-server"),
)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: its lines come after pytest's summary
def pytest_terminal_summary(terminalreporter: Any) -> Iterator[None]:
    """After pytest's summary: what was skipped and the command that makes it run (exit codes unchanged)."""
    result = yield
    skipped = terminalreporter.stats.get("skipped", [])
    counts: dict[str, int] = {}
    for report in skipped:
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
        where = f"{report.nodeid} {reason}"
        how = next((how for key, how in HOW_TO_RUN_SKIPPED if key in where), f"skipped: {reason}")
        counts[how] = counts.get(how, 0) + 1
    if counts:
        terminalreporter.write_sep("=", "skipped tests and how to run them", yellow=True)
        for how, count in counts.items():
            terminalreporter.write_line(f"{count} test{'s' if count > 1 else ''}: {how}")
    return result


@pytest.fixture(autouse=True)
def clean_redis() -> None:
    """An empty Redis that lost nothing: its ledger of pending writes is whole (a test that loses it
    flushes Redis itself, see ``tests/conversations/test_acknowledged.py``)."""
    from conversations import cache
    from conversations.services import ledger

    redis = get_redis_connection("default")
    redis.flushdb()
    redis.hset(cache.LEDGER_KEY, mapping={"since": 1, "whole_at": 1})
    ledger._recorded = False  # each test a deployment of its own: its first append looks at the ledger


class InstallsInline(services.BackgroundInstalls):
    """The reader's own thread runs the install it hands over, before its read answers: a test sees
    the cache its read installed, and an interleaving schedules the install as the reader's step.
    The install thread itself is tested with the ``background_installs`` fixture."""

    def submit(self, install: Any) -> bool:
        install()
        return True


@pytest.fixture(autouse=True)
def installs_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rebuilding, "background_installs", InstallsInline(limit=1))


@pytest.fixture
def background_installs(monkeypatch: pytest.MonkeyPatch) -> Iterator[services.BackgroundInstalls]:
    """The install thread as the service runs it; every install has run when the test ends."""
    installs = services.BackgroundInstalls(limit=64)
    monkeypatch.setattr(rebuilding, "background_installs", installs)
    yield installs
    installs.wait(timeout=10)


QUEUES = (settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE)


def purge_queue() -> None:
    """Empty the test queues, declaring them first (as a worker would) so they always exist, and take
    this run's tasks still waiting out a countdown in RabbitMQ's delay queues: an earlier test's
    delayed task (a cache repair sweep, a barrier) would otherwise reach a queue in the middle of a
    later test."""
    with celery_app.connection_for_write() as broker:
        try:
            for queue in QUEUES:
                celery_app.amqp.queues[queue](broker.default_channel).declare()
                broker.default_channel.queue_purge(queue)
            take_delayed_tasks(broker.default_channel, *QUEUES)
        except Exception:  # a test left the broker unreachable: its own fixtures restore it
            broker.close()


@pytest.fixture(autouse=True)
def clean_queue() -> None:
    purge_queue()


@pytest.fixture(scope="session", autouse=True)
def delayed_delivery() -> None:
    """RabbitMQ's delay queues, with the test queues bound to them, as a worker declares them when it
    starts on quorum queues: a task this process publishes with a countdown (a barrier's last step)
    waits there, then comes to its queue."""
    if settings.MEMORY_QUEUE_TYPE != "quorum":
        return
    try:
        with celery_app.connection_for_write() as broker:
            declare_native_delayed_delivery_exchanges_and_queues(broker, "quorum")
            for queue in QUEUES:
                bind_queue_to_native_delayed_delivery_exchange(broker, celery_app.amqp.queues[queue])
    except Exception:  # noqa: S110 - no broker: the tests that need one say so
        pass


@pytest.fixture(scope="session", autouse=True)
def delete_test_queue_at_the_end() -> Iterator[None]:
    yield
    with celery_app.connection_for_write() as broker:
        for queue in QUEUES:
            try:
                broker.default_channel.queue_delete(queue)
            except Exception:  # noqa: S110 - already gone
                broker.close()


@pytest.fixture
def tenant(db: Any):
    return TenantFactory(slug="acme")


@pytest.fixture
def other_tenant(db: Any):
    return TenantFactory(slug="globex")


def client_for(tenant: Any) -> APIClient:
    _, key = tenant_services.api_key_create(tenant=tenant, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    client.api_key = key
    return client


@pytest.fixture
def api(tenant: Any) -> APIClient:
    return client_for(tenant)


@pytest.fixture
def other_api(other_tenant: Any) -> APIClient:
    return client_for(other_tenant)


@pytest.fixture
def operator(tenant: Any) -> Any:
    """A staff user of acme in the admin (sees and acts on acme only)."""
    return tenant_services.operator_create(tenant=tenant, username="ada", password="a-long-password-1")


@pytest.fixture
def operator_client(client: Any, operator: Any) -> Any:
    client.force_login(operator)
    return client


# --- A real Celery worker ------------------------------------------------------------------------

_workers: dict[str, CeleryWorker] = {}


@pytest.fixture(scope="session")
def worker_env(django_db_setup: Any, django_db_blocker: Any) -> Iterator[dict[str, str]]:
    """The environment of a worker process: the same test database, Redis and queue as the tests.
    The workers stop when it is torn down, which is before the test database is dropped."""
    with django_db_blocker.unblock():
        db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        MEMORY_QUEUE=settings.MEMORY_QUEUE,
        MEMORY_DERIVED_QUEUE=settings.MEMORY_DERIVED_QUEUE,
        MEMORY_RETRY_BACKOFF_MAX="2",
    )
    yield env
    for worker in _workers.values():
        worker.stop()


@pytest.fixture
def worker(worker_env: dict[str, str], transactional_db: Any) -> CeleryWorker:
    """A running worker consuming the test queue (started once, restarted after a test killed it)."""
    worker = _workers.setdefault("main", CeleryWorker(env=worker_env, name="main"))
    if not worker.running:
        worker.start()
    return worker


@pytest.fixture
def derived_worker(worker_env: dict[str, str], transactional_db: Any) -> Iterator[CeleryWorker]:
    """A worker consuming the derived-memory queue (vectors, summaries) for this test only, so the
    derived tasks of later tests never run against their rows."""
    worker = CeleryWorker(env=worker_env, name="derived", queue_variable="MEMORY_DERIVED_QUEUE")
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def no_worker(transactional_db: Any) -> None:
    """No worker consumes the queue: acknowledged writes stay pending."""
    worker = _workers.get("main")
    if worker is not None:
        worker.stop()


TASK_SERVICES = {
    "conversations.tasks.messages_persist": "messages_persist",
    "conversations.tasks.memory_persist": "memory_persist",
}


def take_queued_tasks(queue: str | None = None) -> list[tuple[str, Any]]:
    """Take every task waiting in a test queue (the persist queue unless named): (task name, first
    argument) for the persist queue, (task name, argument list) for the derived queue."""
    queue = queue or settings.MEMORY_QUEUE
    tasks = []
    with celery_app.connection_for_write() as broker:
        channel = broker.default_channel
        messages = []
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            messages.append(message)
        for message in messages + take_delayed_tasks(channel, queue):
            args, _kwargs, _embed = json.loads(message.body)
            name = message.headers["task"]
            whole = name in ("conversations.tasks.ledger_barrier", "conversations.tasks.cache_repair_sweep")
            tasks.append((name, args[0] if queue == settings.MEMORY_QUEUE and not whole else args))
    return tasks


def take_delayed_tasks(channel: Any, *queues: str) -> list[Any]:
    """The messages published with a countdown for ``queues`` still waiting in RabbitMQ's delay
    queues, taken now as if their time had come (a test runs a round of barriers without waiting
    for its slack). Those of other queues (other test runs on this broker) are put back."""
    if settings.MEMORY_QUEUE_TYPE != "quorum":
        return []
    endings = tuple(f".{queue}" for queue in queues)
    taken, others = [], []
    for level in range(MAX_NUMBER_OF_BITS_TO_USE):
        try:
            while (message := channel.basic_get(level_name(level), no_ack=False)) is not None:
                if message.delivery_info["routing_key"].endswith(endings):
                    channel.basic_ack(message.delivery_tag)
                    taken.append(message)
                else:
                    others.append(message)
        except Exception:  # noqa: S112 - no such delay queue on this broker
            continue
    for message in others:
        channel.basic_reject(message.delivery_tag, requeue=True)
    return taken


def run_tasks(tasks: list[tuple[str, dict[str, Any]]]) -> None:
    """Do what the worker does with each task (the service it wraps), in this order."""
    from conversations import services
    from conversations.tasks import ledger_barrier

    for name, payload in tasks:
        if name == "conversations.tasks.messages_persist_many":  # payloads of concurrent appends
            run_tasks([("conversations.tasks.messages_persist", each) for each in payload])
        elif name == "conversations.tasks.ledger_barrier":
            ledger_barrier.run(*payload)  # one step of a round; the next one it publishes is queued
        elif name == "conversations.tasks.cache_repair_sweep":  # after a settle that failed
            services.cache_repair_sweep()
        else:
            getattr(services, TASK_SERVICES[name])(payload=payload)


def run_queued_tasks() -> int:
    """Take every queued task and run it here, as a worker would; returns how many ran."""
    tasks = take_queued_tasks()
    run_tasks(tasks)
    return len(tasks)


def wait_for_rows(model: Any, tenant: Any, count: int, timeout: float = 30, **filters: Any) -> None:
    wait_until(
        lambda: model.objects.for_tenant(tenant).filter(**filters).count() >= count,
        timeout=timeout,
        message=f"{count} {model.__name__} rows",
    )


@pytest.fixture
def refusing_queue() -> Iterator[str]:
    """A queue the broker refuses every publish to (max-length 0, reject-publish)."""
    name = f"memtest-refuse-{uuid.uuid4().hex[:8]}"
    policy = [
        "rabbitmqctl",
        "set_policy",
        "--apply-to",
        "queues",
        name,
        f"^{name}$",
        '{"max-length":0,"overflow":"reject-publish"}',
    ]
    subprocess.run(policy, check=True, capture_output=True, timeout=60)
    yield name
    subprocess.run(["rabbitmqctl", "clear_policy", name], capture_output=True, timeout=60)
    with celery_app.connection_for_write() as broker:
        broker.default_channel.queue_delete(name)
