"""The service as production runs it, on this machine, for the capacity benchmark.

A Redis and a RabbitMQ node of the benchmark's own (``torture.processes``, free ports, temporary
directories: their CPU and counters are the benchmark's alone, where the machine's are shared), the
machine's PostgreSQL with a database of its own reached through ``StatementProxy``, gunicorn as
``gunicorn.conf.py`` and ``WebServer`` run it, a persist worker (the README's threads pool) and a
derived worker (the embedding model, one process). The benchmark process itself talks to the same
engines directly, and its PostgreSQL connections carry ``MONITOR`` so that their CPU is not counted.

With ``embedding_server``, the model runs outside the service: the repository's model server
(``benchmarks/model_server.py``) serves the same local model on ``/v1/embeddings`` and the service
embeds there (``MEMORY_EMBEDDING_MODEL=openai:all-MiniLM-L6-v2``, ``MEMORY_EMBEDDING_BASE_URL``), as a
deployment with a GPU embedding server does: the derived worker and the web only call out. The
server's CPU is metered apart (``EMBEDDING_SERVER``), outside the service's.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from benchmarks.capacity.meters import MONITOR, Meters, StatementProxy
from torture.processes import CeleryWorker, PrivateRabbit, PrivateRedis, ServiceProcess, WebServer, free_port

QUEUE = "capacity"
TENANT_SLUG = "bench-capacity"
RATE_LIMIT = 1_000_000_000  # the throttle runs (one Redis call a request) but never answers 429
PERSIST_WORKER = {"pool": "threads", "concurrency": 8}  # as README's Operations section runs the write queue
DERIVED_WORKER = {"pool": "prefork", "concurrency": 1}
EMBEDDING_SERVER = "embedding server"  # its meter's name: a process outside the service
REMOTE_MODEL = "openai:all-MiniLM-L6-v2"  # the default model, served by the embedding server


def _with_host(url: str, *, port: int, query: str = "") -> str:
    parts = urlsplit(url)
    user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit((parts.scheme, f"{user}127.0.0.1:{port}", parts.path, query or parts.query, ""))


class EmbeddingServer(ServiceProcess):
    """The repository's model server on a free port: the local model over HTTP (``/v1/embeddings``)."""

    kind = "model-server"

    def __init__(self, *, env: dict[str, str], name: str) -> None:
        super().__init__(env=env, name=name)
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return ["benchmarks.model_server", "--port", str(self.port)]

    def is_ready(self, log_offset: int) -> bool:
        with self.log_path.open() as log:
            log.seek(log_offset)
            return "Serving " in log.read()


@dataclass
class Deployment:
    database_url: str
    web_workers: int = 2
    web_threads: int = 8
    embedding_server: bool = False  # embed on the model server (outside the service), not in process
    redis: PrivateRedis = field(default_factory=PrivateRedis)
    rabbit: PrivateRabbit = field(default_factory=PrivateRabbit)
    proxy: StatementProxy | None = None
    web: WebServer | None = None
    persist: CeleryWorker | None = None
    derived: CeleryWorker | None = None
    model_server: EmbeddingServer | None = None
    env: dict[str, str] = field(default_factory=dict)
    api_key: str = ""
    rabbit_metrics_port: int = field(default_factory=free_port)

    def start(self) -> None:
        """Engines, database, tenant and key, then the three kinds of processes (started together)."""
        parts = urlsplit(self.database_url)
        self.redis.start()
        (self.rabbit.directory / "enabled_plugins").write_text("[rabbitmq_prometheus].\n")
        with open(self.rabbit.directory / "rabbitmq.conf", "a") as config:
            config.write(f"prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = {self.rabbit_metrics_port}\n")
        self.rabbit.start()
        self.proxy = StatementProxy(parts.port or 5432, parts.hostname or "127.0.0.1")
        self.proxy.start()
        self.env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
            DATABASE_URL=_with_host(self.database_url, port=self.proxy.port),
            REDIS_URL=self.redis.url,
            CELERY_BROKER_URL=self.rabbit.url,
            MEMORY_QUEUE=QUEUE,
            MEMORY_DERIVED_QUEUE=f"{QUEUE}-derived",
            MEMORY_RATE_LIMIT=str(RATE_LIMIT),
            DJANGO_DEBUG="false",
            DJANGO_LOG_LEVEL="WARNING",
        )
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.env.pop("MEMORY_EMBEDDING_MODEL", None)  # the default model: what a deployment embeds with
        self.env.pop("MEMORY_EMBEDDING_BASE_URL", None)
        if self.embedding_server:
            self.model_server = EmbeddingServer(env=dict(self.env), name="capacity-embeddings")
            self.model_server.start()
            self.env |= {
                "MEMORY_EMBEDDING_MODEL": REMOTE_MODEL,
                "MEMORY_EMBEDDING_BASE_URL": self.model_server.url,
                # CPU is measured, not latency: a batch computed on shared cores may take far longer
                # than a GPU's, and must not time out into retries or a search answered by its words.
                "MEMORY_EMBEDDING_TIMEOUT": "300",
                "MEMORY_EMBEDDING_QUERY_TIMEOUT": "60",
            }
        os.environ.update({name: value for name, value in self.env.items() if name != "DATABASE_URL"})
        os.environ["DATABASE_URL"] = self.database_url + ("&" if parts.query else "?") + f"application_name={MONITOR}"
        self._prepare_database()
        self.web = WebServer(env=self.env, name="capacity-web", workers=self.web_workers, threads=self.web_threads)
        self.persist = CeleryWorker(env=self.env, name="capacity-persist", **PERSIST_WORKER)
        self.derived = CeleryWorker(
            env=self.env, name="capacity-derived", queue_variable="MEMORY_DERIVED_QUEUE", **DERIVED_WORKER
        )
        failures: list[BaseException] = []

        def start(process: Any) -> None:
            try:
                process.start()
            except BaseException as error:  # reported below, once every start has returned
                failures.append(error)

        threads = [threading.Thread(target=start, args=(each,)) for each in (self.web, self.persist, self.derived)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]

    def _prepare_database(self) -> None:
        import django

        django.setup()
        from django.core.management import call_command

        from benchmarks.database import ensure_database
        from tenants import services
        from tenants.models import Tenant

        ensure_database()
        call_command("migrate", verbosity=0, interactive=False)
        tenant, _ = Tenant.objects.get_or_create(slug=TENANT_SLUG, defaults={"name": "Bench capacity"})
        _, self.api_key = services.api_key_create(tenant=tenant, name="capacity")

    @property
    def tenant(self) -> Any:
        from tenants.models import Tenant

        return Tenant.objects.get(slug=TENANT_SLUG)

    def meters(self) -> Meters:
        from django.conf import settings

        if self.web is None or self.persist is None or self.derived is None or self.proxy is None:
            raise RuntimeError("Deployment.start() first: the meters read its running processes.")
        return Meters(
            processes={
                "web": self.web.process.pid,
                "persist worker": self.persist.process.pid,
                "derived worker": self.derived.process.pid,
            },
            database=settings.DATABASES["default"],
            redis_url=self.redis.url,
            rabbit=self.rabbit,
            rabbit_metrics_url=f"http://127.0.0.1:{self.rabbit_metrics_port}/metrics",
            proxy=self.proxy,
            outside={EMBEDDING_SERVER: self.model_server.process.pid}
            if self.model_server is not None and self.model_server.process is not None
            else None,
        )

    def derived_consuming(self, consuming: bool) -> None:
        """Start or stop the derived worker taking tasks (Celery's remote control), the process and
        its loaded model staying up; a task it holds is finished either way."""
        from memoryproject.celery import app

        assert self.derived is not None
        destination = [f"{self.derived.name}-{os.getpid()}@{socket.gethostname()}"]
        queue = self.env["MEMORY_DERIVED_QUEUE"]
        if consuming:
            replies = app.control.add_consumer(queue, destination=destination, reply=True, timeout=10)
        else:
            replies = app.control.cancel_consumer(queue, destination=destination, reply=True, timeout=10)
        if not replies:
            raise RuntimeError(f"the derived worker {destination[0]} did not answer the remote control")

    def purge(self, name: str) -> int:
        from memoryproject.celery import app

        with app.connection_for_write() as connection:
            return connection.default_channel.queue_purge(self.env[name]) or 0

    def stop(self) -> None:
        for process in (self.web, self.persist, self.derived, self.model_server):
            if process is not None:
                process.stop()
        if self.proxy is not None:
            self.proxy.close()
        self.redis.close()
        self.rabbit.close()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: S110 - Django never set up: nothing to close
            pass
