"""Fixtures of the client tests: the service as its clients meet it over HTTP.

A real gunicorn serves ``memoryproject.wsgi`` on a free port and a real Celery worker consumes the
test queue, both on the test database, Redis database and queue of the run (``worker_env``); a
test may kill either and start it again. Tests here use ``transactional_db`` so that what they
create (the tenant, its API key) is committed and visible to those processes.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django_redis import get_redis_connection

from conversations.models import Message
from memory_client import MemoryClient
from memory_client.store import ServiceStore
from memoryproject.celery import app as celery_app
from tenants import services as tenant_services
from tests.faults import CeleryWorker, WebServer, wait_until


@pytest.fixture(scope="session")
def web_servers(worker_env: dict[str, str]) -> Iterator[dict[str, WebServer]]:
    """The session's web servers, stopped at the end (before the test database is dropped)."""
    servers: dict[str, WebServer] = {}
    yield servers
    for server in servers.values():
        server.stop()


# The model servers of these tests listen on loopback, which the egress policy refuses to a tenant's
# URL: the operator of this deployment allows it (tests/security/test_egress.py tests the policy).
LOOPBACK_ALLOWED = "127.0.0.1/32"


@pytest.fixture(autouse=True)
def loopback_model_servers_allowed(settings: Any) -> None:
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK_ALLOWED]


def running_web(
    web_servers: dict[str, WebServer], worker_env: dict[str, str], name: str, *, workers: int = 2, **limits: int
) -> WebServer:
    """The session's gunicorn ``name``, running (started once, started again after a test killed it),
    with these lower ``MEMORY_*`` limits, on the same database."""
    environment = {**worker_env, "MEMORY_EGRESS_ALLOWED_NETWORKS": LOOPBACK_ALLOWED}
    environment |= {setting: str(value) for setting, value in limits.items()}
    server = web_servers.setdefault(name, WebServer(env=environment, name=name, workers=workers))
    if not server.running:
        server.start()
    return server


@pytest.fixture
def web(web_servers: dict[str, WebServer], worker_env: dict[str, str], transactional_db: Any) -> WebServer:
    """A running gunicorn (started once, started again after a test killed it)."""
    return running_web(web_servers, worker_env, "main")


# MEMORY_MAX_BATCH of ``small_batch_web``: a service whose operator lowered it below the clients' 100.
SMALL_BATCH = 3


@pytest.fixture
def small_batch_web(web_servers: dict[str, WebServer], worker_env: dict[str, str], transactional_db: Any) -> WebServer:
    """A running gunicorn that takes at most SMALL_BATCH items per request, on the same database."""
    return running_web(web_servers, worker_env, "small-batch", workers=1, MEMORY_MAX_BATCH=SMALL_BATCH)


# MEMORY_MAX_PAGE_SIZE of ``small_page_web``: a service answering fewer items per page than the
# clients ask for (pages of 100 checkpoints, LangGraph's 100 namespaces and 10 search results).
SMALL_PAGE = 4


@pytest.fixture
def small_page_web(web_servers: dict[str, WebServer], worker_env: dict[str, str], transactional_db: Any) -> WebServer:
    """A running gunicorn that answers at most SMALL_PAGE items per page, on the same database."""
    return running_web(web_servers, worker_env, "small-page", workers=1, MEMORY_MAX_PAGE_SIZE=SMALL_PAGE)


class Recorder(Protocol):
    def record(self, request: httpx.Request) -> None: ...


class RecordingTransport(httpx.HTTPTransport):
    """httpx's transport, showing ``recorder`` every request before sending it."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.recorder.record(request)
        return super().handle_request(request)


class AsyncRecordingTransport(httpx.AsyncHTTPTransport):
    """httpx's async transport, showing ``recorder`` every request before sending it."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.recorder.record(request)
        return await super().handle_async_request(request)


def recording_transports(recorder: Recorder) -> dict[str, Any]:
    """``MemoryClient``'s transports, sync and async, showing ``recorder`` every request."""
    return {"transport": RecordingTransport(recorder), "async_transport": AsyncRecordingTransport(recorder)}


@dataclass
class LiveService:
    """The running service and a key of the ``tenant`` fixture's tenant."""

    web: WebServer
    worker: CeleryWorker
    api_key: str

    @property
    def url(self) -> str:
        return self.web.url

    def client(self, *, api_key: str | None = None, retries: int = 3, timeout: float = 10.0) -> MemoryClient:
        return MemoryClient(self.url, api_key or self.api_key, retries=retries, timeout=timeout)


def queued_tasks() -> int:
    with celery_app.connection_for_write() as broker:
        return broker.default_channel.queue_declare(queue=settings.MEMORY_QUEUE, passive=True).message_count


def unpersisted_writes() -> list[str]:
    """Ids of acknowledged messages (in a ``:pending`` hash) that have no row yet. A message with a
    row counts as persisted even if its pending entry stays: a worker that settles before the web
    process has recorded the entry leaves it behind."""
    redis = get_redis_connection("default")
    pending = {message_id.decode() for key in redis.scan_iter(match="*:pending") for message_id in redis.hkeys(key)}
    # Every tenant's rows: the test database holds only this test's.
    persisted = Message.unscoped.filter(message_id__in=pending).values_list("message_id", flat=True)
    return sorted(pending - {str(message_id) for message_id in persisted})


def busy_database_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND state IN ('active', 'idle in transaction')"
        )
        return cursor.fetchone()[0]


def wait_for_a_quiet_service(worker: CeleryWorker) -> None:
    """Until the worker has persisted what the test appended and no process is inside a transaction:
    emptying the tables for the next test would otherwise deadlock with a persist still running."""
    if worker.running:
        try:
            wait_until(lambda: queued_tasks() == 0 and not unpersisted_writes(), message="the worker to persist every write")
        except AssertionError as error:
            raise AssertionError(f"{error}: {queued_tasks()} tasks queued, not persisted: {unpersisted_writes()}") from None
    wait_until(lambda: busy_database_sessions() == 0, message="the service's database sessions to finish")


@pytest.fixture
def service(web: WebServer, worker: CeleryWorker, tenant: Any) -> Iterator[LiveService]:
    _, key = tenant_services.api_key_create(tenant=tenant, name="client-tests")
    yield LiveService(web=web, worker=worker, api_key=key)
    wait_for_a_quiet_service(worker)


@pytest.fixture
def memory(service: LiveService) -> Iterator[MemoryClient]:
    """A client of the live service, authenticated as the tenant."""
    with service.client() as client:
        yield client


@pytest.fixture
def service_store(service: LiveService) -> Iterator[ServiceStore]:
    """The service's LangGraph store, as a tenant's key reaches it."""
    client = service.client()
    yield ServiceStore(client)
    client.close()


def keys(items: list[Any]) -> list[str]:
    """The keys of a store's answer, in order."""
    return [item.key for item in items]
