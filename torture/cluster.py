"""The system under test: private PostgreSQL, Redis and RabbitMQ, gunicorn, two Celery workers
(one with beat), and the faults that can be done to each.

``Cluster.start()`` starts the servers, migrates, creates the tenants with an API key each, then the
web server and the workers, all with the same environment (the test settings pointed at the
private servers, the service's own retry and backoff settings unless ``settings`` overrides them).
Each fault is a method that breaks one or two parts and heals them before it returns (``heal`` is
the safety net after one that failed half-way); every method is safe to call twice.

Moments the checker must know are recorded here: when Redis restarted empty (``redis_forgotten``)
and when it did not answer (``redis_unreachable``).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from torture.processes import (
    CeleryWorker,
    PrivatePostgres,
    PrivateRabbit,
    PrivateRedis,
    WebServer,
    children,
    wait_until,
)

QUEUE = "torture"
REDIS_SOCKET_TIMEOUT = 0.5  # seconds (MEMORY_REDIS_SOCKET_TIMEOUT): a pause longer than this is an outage
REFUSAL_SECONDS = 3.0  # how long the persist queue refuses publishes
BEFORE_SECOND_FAULT = 1.5  # seconds of PostgreSQL outage before the second fault: tasks fail and retry
CONFIRM_TIMEOUT = 5.0  # seconds the service waits for a publisher confirm (CELERY_BROKER_TRANSPORT_OPTIONS)
RABBIT_PAUSE = 7.0  # seconds the broker is paused: longer than the confirm timeout
KEEPING_UP = 20  # ready messages in the persist queue below which its workers are keeping up


@dataclass
class Tenant:
    slug: str
    key: str


@dataclass
class Cluster:
    tenant_count: int = 3
    web_workers: int = 3
    postgres: PrivatePostgres = field(default_factory=PrivatePostgres)
    redis: PrivateRedis = field(default_factory=PrivateRedis)
    rabbit: PrivateRabbit = field(default_factory=PrivateRabbit)
    tenants: list[Tenant] = field(default_factory=list)
    web: WebServer | None = None
    workers: list[CeleryWorker] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # MEMORY_* overrides for every process
    redis_forgotten: list[float] = field(default_factory=list)  # when Redis restarted empty
    redis_unreachable: list[tuple[float, float]] = field(default_factory=list)  # when it did not answer
    topology: str = "single"  # or "cluster": each engine on several nodes (TOPOLOGIES)

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology {self.topology!r}; choose among {', '.join(TOPOLOGIES)}")
        if self.topology == "cluster":
            from torture.postgres_replica import PrivatePostgresPair
            from torture.rabbit_cluster import PrivateRabbitCluster
            from torture.redis_cluster import PrivateRedisCluster

            self.postgres = PrivatePostgresPair()
            self.redis = PrivateRedisCluster()
            self.rabbit = PrivateRabbitCluster()

    def describe(self) -> str:
        if self.topology == "cluster":
            return "PostgreSQL with a streaming replica, a Redis Cluster of 3 primaries and 3 replicas, 3 RabbitMQ nodes"
        return "PostgreSQL, Redis, RabbitMQ"

    def start(self) -> None:
        self.postgres.start()
        self.redis.start()
        self.rabbit.start()
        self.env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
            DATABASE_URL=self.postgres.url,
            REDIS_URL=self.redis.url,
            CELERY_BROKER_URL=self.rabbit.url,
            MEMORY_QUEUE=QUEUE,
            MEMORY_DERIVED_QUEUE=f"{QUEUE}-derived",
            MEMORY_EMBEDDING_MODEL="",  # no vectors: this measures the write path
            MEMORY_REDIS_SOCKET_TIMEOUT=str(REDIS_SOCKET_TIMEOUT),
            MEMORY_RATE_LIMIT="100000000",
            DJANGO_LOG_LEVEL="WARNING",
        )
        for name in ("MEMORY_RETRY_BACKOFF_MAX", "MEMORY_PERSIST_MAX_RETRIES"):
            self.env.pop(name, None)  # the service's defaults, unless overridden below
        engines = {}
        if self.topology == "cluster":  # the clustered engines' URLs and settings (several nodes, replica, queue type)
            for engine in (self.postgres, self.redis, self.rabbit):
                engines.update(engine.service_env())
        self.env.update(engines)
        self.env.update(self.settings)
        os.environ.update(
            {name: self.env[name] for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
        )
        for name in (
            "MEMORY_QUEUE",
            "MEMORY_DERIVED_QUEUE",
            "MEMORY_EMBEDDING_MODEL",
            "MEMORY_RATE_LIMIT",
            *engines,
            *self.settings,
        ):
            os.environ[name] = self.env[name]
        self._prepare_database()
        self.web = WebServer(env=self.env, name="torture-web", workers=self.web_workers)
        self.web.start()
        self.workers = [
            CeleryWorker(env=self.env, name="torture-a", concurrency=2, beat=True),
            CeleryWorker(env=self.env, name="torture-b", concurrency=2),
        ]
        for worker in self.workers:
            worker.start()

    def _prepare_database(self) -> None:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        from tenants import services
        from tenants.models import Tenant as TenantRow

        for index in range(self.tenant_count):
            tenant, _ = TenantRow.objects.get_or_create(slug=f"torture-{index}", defaults={"name": f"Torture {index}"})
            _, key = services.api_key_create(tenant=tenant, name="torture")
            self.tenants.append(Tenant(slug=tenant.slug, key=key))

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        if self.web is not None:
            self.web.stop()
        self.redis.close()
        self.rabbit.close()
        from django.db import connections

        connections.close_all()
        self.postgres.close()

    # --- Faults -------------------------------------------------------------------------------------

    def kill_worker_process(self, rng: random.Random) -> str:
        """SIGKILL one pool process of a Celery worker, mid-task if one is running; Celery replaces it
        and the broker redelivers its unacknowledged task."""
        worker = rng.choice(self.workers)
        pool = children(worker.process.pid) if worker.running else []
        if not pool:
            return "no pool process to kill"
        victim = rng.choice(pool)
        os.kill(victim, signal.SIGKILL)
        return f"SIGKILL pool process {victim} of {worker.name}"

    def kill_worker(self, rng: random.Random) -> str:
        """SIGKILL a whole Celery worker (main process and pool), then start it again."""
        worker = rng.choice(self.workers)
        worker.kill()
        time.sleep(1.0)
        worker.start()
        return f"SIGKILL {worker.name}, restarted"

    def kill_web_worker(self, rng: random.Random) -> str:
        """SIGKILL one gunicorn worker: requests in its hands fail (indeterminate), the master forks another."""
        pool = children(self.web.process.pid) if self.web and self.web.running else []
        if not pool:
            return "no web worker to kill"
        victim = rng.choice(pool)
        os.kill(victim, signal.SIGKILL)
        return f"SIGKILL gunicorn worker {victim}"

    def restart_redis_empty(self, rng: random.Random) -> str:
        self.redis_forgotten.append(time.time())
        self.redis.restart_empty()
        return "Redis restarted empty"

    def pause_redis(self, rng: random.Random, seconds: float = 2.0) -> str:
        started = time.time()
        self.redis.pause()
        try:
            time.sleep(seconds)
        finally:
            self.redis.resume()
            self.redis_unreachable.append((started, time.time()))
        return f"Redis paused {seconds:.1f} s (socket timeout {REDIS_SOCKET_TIMEOUT} s)"

    def stop_postgres(self, rng: random.Random, seconds: float = 4.0) -> str:
        self.postgres.stop()
        try:
            time.sleep(seconds)
        finally:
            self.postgres.start()
        return f"PostgreSQL stopped {seconds:.1f} s"

    def restart_rabbitmq(self, rng: random.Random) -> str:
        self.rabbit.stop()
        self.rabbit.start()
        return "RabbitMQ restarted"

    def pause_rabbitmq(self, rng: random.Random, seconds: float = RABBIT_PAUSE) -> str:
        """SIGSTOP the broker for longer than the service's confirm timeout: publishes already sent
        get no confirm in time (the API must not call them refused), and the broker stores them when
        it resumes."""
        self.rabbit.pause()
        try:
            time.sleep(seconds)
        finally:
            self.rabbit.resume()
        return f"RabbitMQ paused {seconds:.1f} s (SIGSTOP; the service's confirm timeout is {CONFIRM_TIMEOUT:.0f} s)"

    def stop_rabbitmq_gracefully(self, rng: random.Random, seconds: float = 2.0) -> str:
        """``rabbitmqctl stop_app``, then ``start_app``: the node closes every connection at once, so
        publishes in flight (the API's and the workers' retries) lose their confirms."""
        try:
            self.rabbit.stop_app()
            time.sleep(seconds)
        finally:
            self.rabbit.start_app()
        return f"RabbitMQ application stopped {seconds:.1f} s (rabbitmqctl stop_app, start_app)"

    def _workers_consuming(self) -> str:
        """Wait (a while) until every worker consumes the persist queue again and keeps up with it:
        after a broker fault they reconnect with a growing backoff, and a PostgreSQL outage tests
        little while no task runs and retries. Answers how long it waited, for the fault's line."""
        started = time.monotonic()

        def consuming() -> bool:
            depth = self.rabbit.depth(QUEUE)
            return depth is not None and depth[0] <= KEEPING_UP and depth[1] >= len(self.workers)

        try:
            wait_until(consuming, timeout=30, message="the workers to consume")
        except AssertionError:
            return f"; workers not consuming, or not keeping up, after {time.monotonic() - started:.0f} s"
        waited = time.monotonic() - started
        return f"; waited {waited:.0f} s for the workers to consume" if waited >= 1 else ""

    def refuse_publishes_during_postgres_outage(self, rng: random.Random) -> str:
        """PostgreSQL stops; once persist tasks are failing and retrying, the persist queue refuses
        every publish for a while (the API's, and the workers' retry republishes) while keeping what
        it holds; publishes are accepted again, then PostgreSQL starts."""
        waited = self._workers_consuming()
        self.postgres.stop()
        try:
            time.sleep(BEFORE_SECOND_FAULT)
            self.rabbit.refuse_publishes(QUEUE)
            try:
                time.sleep(REFUSAL_SECONDS)
            finally:
                moved, dropped = self.rabbit.accept_publishes(QUEUE)
        finally:
            self.postgres.start()
        return (
            f"PostgreSQL stopped; publishes to {QUEUE} refused {REFUSAL_SECONDS:.0f} s{self._displaced(moved, dropped)}{waited}"
        )

    def refuse_publishes_across_postgres_restart(self, rng: random.Random) -> str:
        """As above, but PostgreSQL starts while publishes are still refused: the retries that now
        succeed and those refused overlap."""
        waited = self._workers_consuming()
        try:
            self.postgres.stop()
            time.sleep(BEFORE_SECOND_FAULT)
            self.rabbit.refuse_publishes(QUEUE)
            time.sleep(REFUSAL_SECONDS / 2)
        finally:
            self.postgres.start()
            try:
                time.sleep(REFUSAL_SECONDS / 2)
            finally:
                moved, dropped = self.rabbit.accept_publishes(QUEUE)
        return f"PostgreSQL restarted while publishes to {QUEUE} were refused{self._displaced(moved, dropped)}{waited}"

    @staticmethod
    def _displaced(moved: int, dropped: int) -> str:
        return (
            f" ({moved} queued messages set aside and put back; {dropped} rejected by a consumer meanwhile,"
            " dropped as the broker drops them)"
        )

    def restart_redis_empty_during_postgres_outage(self, rng: random.Random, seconds: float = 3.0) -> str:
        """Both stores of idempotency at once: Redis forgets the writes still pending while PostgreSQL
        cannot be asked which ids it holds."""
        waited = self._workers_consuming()
        self.postgres.stop()
        try:
            time.sleep(BEFORE_SECOND_FAULT)
            self.redis_forgotten.append(time.time())
            self.redis.restart_empty()
            time.sleep(seconds)
        finally:
            self.postgres.start()
        return (
            f"PostgreSQL stopped; Redis restarted empty {BEFORE_SECOND_FAULT:.1f} s in; PostgreSQL started "
            f"{seconds:.1f} s later{waited}"
        )

    def restart_rabbitmq_during_postgres_outage(self, rng: random.Random) -> str:
        """The broker restarts while persist tasks are failing and retrying against a stopped PostgreSQL."""
        waited = self._workers_consuming()
        self.postgres.stop()
        try:
            time.sleep(BEFORE_SECOND_FAULT)
            self.rabbit.stop()
            self.rabbit.start()
        finally:
            self.postgres.start()
        return f"PostgreSQL stopped; RabbitMQ restarted meanwhile; PostgreSQL started{waited}"

    def kill_postgres_replica(self, rng: random.Random) -> str:
        """SIGKILL the PostgreSQL read replica (``PrivatePostgresPair``) under load, a few seconds
        down, then streaming again: the reads it served fall back to the primary, nothing fails."""
        kill = getattr(self.postgres, "kill_replica", None)
        if kill is None:
            return "no PostgreSQL replica in this topology"
        return kill(rng)

    def kill_redis_primary(self, rng: random.Random) -> str:
        """Redis Cluster only: SIGKILL a primary; its replica takes its slots over, the killed node
        rejoins as a replica. Commands to those slots fail until then: recorded as unreachable."""
        started = time.time()
        try:
            return self.redis.kill_primary(rng)
        finally:
            self.redis_unreachable.append((started, time.time()))

    # --- Two engines at once (the clustered topology) ----------------------------------------------

    def kill_redis_primary_and_rabbitmq_node(self, rng: random.Random) -> str:
        """A Redis primary and a RabbitMQ node SIGKILLed at the same moment: appends in flight lose
        the slot's primary and, maybe, their broker connection together; both fail over."""
        return self._together(rng, Cluster.kill_redis_primary, Cluster.kill_rabbitmq_node)

    def kill_rabbitmq_node_and_postgres_replica(self, rng: random.Random) -> str:
        """A RabbitMQ node and the PostgreSQL replica SIGKILLed together: persisting and cold reads
        fall over at once."""
        return self._together(rng, Cluster.kill_rabbitmq_node, Cluster.kill_postgres_replica)

    def kill_redis_primary_during_postgres_outage(self, rng: random.Random, seconds: float = 3.0) -> str:
        """PostgreSQL's primary stopped, then a Redis primary killed while it is down: the failover
        happens while the writes that fall back to PostgreSQL cannot, and the persist tasks retry."""
        self.postgres.stop()
        try:
            time.sleep(BEFORE_SECOND_FAULT)
            what = self.kill_redis_primary(rng)
            time.sleep(max(0.0, seconds - BEFORE_SECOND_FAULT))
        finally:
            self.postgres.start()
        return f"PostgreSQL stopped; {what}; PostgreSQL started"

    def _together(self, rng: random.Random, *faults: Callable[[Cluster, random.Random], str]) -> str:
        """The faults started at the same moment, each in a thread with its own random stream; waits
        for all of them (each heals its own engine before it returns)."""
        results: list[str] = [""] * len(faults)
        seeds = [rng.random() for _ in faults]

        def run(index: int) -> None:
            try:
                results[index] = faults[index](self, random.Random(seeds[index]))
            except Exception as error:  # noqa: BLE001 - reported in the nemesis log; heal() follows
                results[index] = f"failed: {error!r}"

        threads = [threading.Thread(target=run, args=(index,), daemon=True) for index in range(len(faults))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        if any(result.startswith("failed") for result in results):
            self.heal()
        return " | ".join(results)

    def kill_rabbitmq_node(self, rng: random.Random) -> str:
        """SIGKILL a node of the RabbitMQ cluster (the persist queue's leader, or the node the workers
        consume from), start it again, and wait until it is back in every quorum queue; then until the
        workers consume and keep up (``--topology cluster``: ``self.rabbit`` is a PrivateRabbitCluster)."""
        self.rabbit.queues = self.rabbit.queues or (QUEUE, f"{QUEUE}-derived")
        return self.rabbit.kill_node(rng) + self._workers_consuming()

    def heal(self) -> None:
        """Everything running again (after a fault that failed half-way, or at the end)."""
        if self.topology == "cluster":
            for engine in (self.redis, self.rabbit, self.postgres):
                engine.heal()
        else:
            self._heal_single_nodes()
        for worker in self.workers:
            if not worker.running:
                worker.start()
        if self.web is not None and not self.web.running:
            self.web.start()
        wait_until(self.web.answers, timeout=60, message="the web server to answer")

    def _heal_single_nodes(self) -> None:
        if self.redis.process is None or self.redis.process.poll() is not None:
            self.redis_forgotten.append(time.time())
            self.redis.start()
        else:
            self.redis.resume()
        if self.rabbit.process is None or self.rabbit.process.poll() is not None:
            self.rabbit.start()
        else:
            self.rabbit.resume()
            self.rabbit.start_app()
        self.rabbit.accept_publishes(QUEUE)
        self.postgres.start()


# In schedule order (round and round): the instant faults, outages and combined faults interleaved,
# so that a short run reaches the combined ones.
FAULTS = {
    "kill-worker-process": Cluster.kill_worker_process,
    "publish-refused-during-postgres-outage": Cluster.refuse_publishes_during_postgres_outage,
    "kill-web-worker": Cluster.kill_web_worker,
    "rabbitmq-pause": Cluster.pause_rabbitmq,
    "redis-restart-empty": Cluster.restart_redis_empty,
    "redis-restart-empty-during-postgres-outage": Cluster.restart_redis_empty_during_postgres_outage,
    "kill-worker": Cluster.kill_worker,
    "rabbitmq-graceful-stop": Cluster.stop_rabbitmq_gracefully,
    "redis-pause": Cluster.pause_redis,
    "publish-refused-across-postgres-restart": Cluster.refuse_publishes_across_postgres_restart,
    "postgres-stop": Cluster.stop_postgres,
    "rabbitmq-restart-during-postgres-outage": Cluster.restart_rabbitmq_during_postgres_outage,
    "rabbitmq-restart": Cluster.restart_rabbitmq,
}

TOPOLOGIES = ("single", "cluster")

# What runs on the clustered topology, in schedule order: a node of each engine killed (its role taken
# over by the others), then the process faults and two engines at once, interleaved. The single-node faults that restart or pause "the" Redis or
# RabbitMQ have no meaning there.
CLUSTER_FAULTS = {
    "redis-primary-kill": Cluster.kill_redis_primary,
    "rabbitmq-node-kill": Cluster.kill_rabbitmq_node,
    "postgres-replica-kill": Cluster.kill_postgres_replica,
    "kill-worker-process": Cluster.kill_worker_process,
    "redis-primary-kill-and-rabbitmq-node-kill": Cluster.kill_redis_primary_and_rabbitmq_node,
    "kill-web-worker": Cluster.kill_web_worker,
    "redis-primary-kill-during-postgres-outage": Cluster.kill_redis_primary_during_postgres_outage,
    "kill-worker": Cluster.kill_worker,
    "rabbitmq-node-kill-and-postgres-replica-kill": Cluster.kill_rabbitmq_node_and_postgres_replica,
    "postgres-stop": Cluster.stop_postgres,
}


def faults_of(topology: str) -> dict[str, Callable[[Cluster, random.Random], str]]:
    return CLUSTER_FAULTS if topology == "cluster" else FAULTS
