"""What a phase of work cost each part of the service, read from the outside before and after it.

* CPU seconds of a process and its descendants: utime + stime of ``/proc/<pid>/stat``. Time on the
  CPU is what a process used, however many others share the cores, so it holds on a busy machine
  where wall time does not.
* PostgreSQL: the CPU of the backends serving the benchmark's database (``pg_stat_activity``), except
  the benchmark's own connection (its ``application_name`` is ``MONITOR``); the statements every
  process sent, counted by ``StatementProxy`` on the wire.
* Redis: ``INFO cpu`` (used_cpu_user + used_cpu_sys) and ``INFO commandstats`` of a Redis only the
  benchmark uses.
* RabbitMQ: the node's beam.smp from ``/proc``, and its global counters (messages received,
  confirmed, delivered, acknowledged) from its Prometheus endpoint (``rabbitmq_prometheus``), read in
  milliseconds where ``rabbitmqctl`` takes a second and the node's CPU.
* Redis counts the commands a script runs as commands: a script call is one round trip, and is
  counted apart (``redis_scripts``).
* Processes outside the service (an embedding server, whose CPU is a GPU machine's in production):
  read from ``/proc`` like the service's, reported apart (``outside_cpu_ms``), never in a total.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import psutil
import psycopg
import redis

from torture.processes import PrivateRabbit, TcpProxy

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MONITOR = "capacity-monitor"  # application_name of the benchmark's own PostgreSQL connections
COMPONENTS = ("web", "persist worker", "derived worker", "postgres", "redis", "rabbitmq")
# RabbitMQ's global counters reported per operation (rabbitmq_prometheus, summed over protocols and queue types).
BROKER_COUNTERS = {
    "published": "rabbitmq_global_messages_received_total",
    "confirmed": "rabbitmq_global_messages_confirmed_total",
    "delivered": "rabbitmq_global_messages_delivered_total",
    "acknowledged": "rabbitmq_global_messages_acknowledged_total",
}
SCRIPT_COMMANDS = ("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro")


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14 and 15 of stat)


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants (gunicorn's workers, a Celery pool)."""
    try:
        descendants = [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    return sum(process_cpu(each) for each in [pid, *descendants])


class StatementCounter:
    """The statements in a client's side of PostgreSQL's protocol: simple queries ('Q') and executes
    of the extended protocol ('E'). Fed the bytes as they pass, in any chunks."""

    def __init__(self) -> None:
        self.started = False  # past the startup message, which (like SSLRequest) has no type byte
        self.header = bytearray()
        self.skip = 0  # bytes of the current message's body still to pass

    def feed(self, data: bytes) -> int:
        statements = 0
        position = 0
        while position < len(data):
            if self.skip:
                step = min(self.skip, len(data) - position)
                self.skip -= step
                position += step
                continue
            wanted = 5 if self.started else 8
            take = min(wanted - len(self.header), len(data) - position)
            self.header += data[position : position + take]
            position += take
            if len(self.header) < wanted:
                break
            if self.started:
                kind, length = self.header[0], int.from_bytes(self.header[1:5], "big")
                statements += kind in (ord("Q"), ord("E"))
                self.skip = length - 4
            else:
                length, code = int.from_bytes(self.header[:4], "big"), int.from_bytes(self.header[4:8], "big")
                self.skip = length - 8
                self.started = code not in (80877103, 80877104)  # SSLRequest, GSSENCRequest: the startup follows
            self.header.clear()
        return statements


class StatementProxy(TcpProxy):
    """A loopback proxy in front of PostgreSQL that counts the statements every connection sends."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        super().__init__(target_port, target_host, idle_timeout=None)
        self.statements = 0
        self._count_lock = threading.Lock()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:  # type: ignore[override]
        if source.getsockname()[1] != self.port:  # the server's answers pass uncounted
            super()._pipe(source, sink)
            return
        counter = StatementCounter()
        try:
            while data := source.recv(65536):
                counted = counter.feed(data)
                if counted:
                    with self._count_lock:
                        self.statements += counted
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@dataclass
class Reading:
    """Every meter at one moment."""

    at: float
    cpu: dict[str, float]
    backends: dict[int, float]  # PostgreSQL backend pid -> its CPU seconds
    redis_commands: dict[str, int]
    broker: dict[str, int]
    sql_statements: int


@dataclass
class Cost:
    """What a phase cost, the idle baseline over the same time taken away, per operation."""

    operations: int
    seconds: float
    cpu_ms: dict[str, float]
    sql_statements: float
    redis_commands: float
    redis_scripts: float
    broker: dict[str, float]
    redis_by_command: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    outside_cpu_ms: dict[str, float] = field(default_factory=dict)  # processes outside the service

    @property
    def cpu_ms_total(self) -> float:
        return round(sum(self.cpu_ms.values()), 3)


class Meters:
    """Reads every meter of a running deployment (the processes' pids, the engines' counters)."""

    def __init__(
        self,
        *,
        processes: dict[str, int],
        database: dict[str, Any],
        redis_url: str,
        rabbit: PrivateRabbit,
        rabbit_metrics_url: str,
        proxy: StatementProxy,
        outside: dict[str, int] | None = None,
    ) -> None:
        self.processes = processes  # component -> pid of its root process
        self.outside = outside or {}  # name -> pid of a process outside the service, metered apart
        self.database_name = database["NAME"]
        self.monitor = psycopg.connect(
            host=database["HOST"] or "127.0.0.1",
            port=database["PORT"] or 5432,
            user=database["USER"],
            password=database["PASSWORD"] or None,
            dbname="postgres",
            autocommit=True,
            application_name=MONITOR,
        )
        self.redis = redis.Redis.from_url(redis_url)
        self.rabbit = rabbit
        self.rabbit_metrics_url = rabbit_metrics_url
        self.beam = next(
            child.pid for child in psutil.Process(rabbit.process.pid).children(recursive=True) if child.name() == "beam.smp"
        )
        self.proxy = proxy
        self.own_redis_commands: dict[str, int] = {}  # commands the benchmark itself sent, taken away

    def backends(self) -> dict[int, float]:
        rows = self.monitor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' "
            "AND coalesce(application_name, '') <> %s",
            [self.database_name, MONITOR],
        ).fetchall()
        return {pid: process_cpu(pid) for (pid,) in rows}

    def broker_counters(self) -> dict[str, int]:
        with urllib.request.urlopen(self.rabbit_metrics_url, timeout=10) as response:  # noqa: S310 - our own node
            text = response.read().decode()
        sums = dict.fromkeys(BROKER_COUNTERS.values(), 0)
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name in sums:
                sums[name] += int(float(line.rsplit(" ", 1)[1]))
        return sums

    def redis_commands(self) -> dict[str, int]:
        stats = self.redis.info("commandstats")
        return {name.removeprefix("cmdstat_"): int(values["calls"]) for name, values in stats.items()}

    def cpu(self) -> dict[str, float]:
        cpu_info = self.redis.info("cpu")
        return {name: tree_cpu(pid) for name, pid in (self.processes | self.outside).items()} | {
            "redis": float(cpu_info["used_cpu_user"]) + float(cpu_info["used_cpu_sys"]),
            "rabbitmq": process_cpu(self.beam),
        }

    def read(self, *, end: bool = False) -> Reading:
        """Every meter. The counters (an HTTP scrape of RabbitMQ, INFO) are read before the CPU times
        at the start of a span and after them at its end, so their own cost falls outside it."""
        if end:
            cpu, backends, at = self.cpu(), self.backends(), time.monotonic()
        counters = (self.broker_counters(), self.redis_commands(), self.proxy.statements)
        if not end:
            at, cpu, backends = time.monotonic(), self.cpu(), self.backends()
            self.own_redis_commands = {}  # what the benchmark sent before the span is not in it
        return Reading(
            at=at, cpu=cpu, backends=backends, broker=counters[0], redis_commands=counters[1], sql_statements=counters[2]
        )

    def own(self, command: str, calls: int = 1) -> None:
        """Commands the benchmark sends Redis itself (deleting a cached list, checking pending writes): taken away."""
        self.own_redis_commands[command] = self.own_redis_commands.get(command, 0) + calls

    def spent(self, before: Reading, after: Reading) -> Cost:
        """The raw totals between two readings (one operation: the whole span)."""
        gone = set(before.backends) - set(after.backends)
        postgres = sum(cpu - before.backends.get(pid, 0.0) for pid, cpu in after.backends.items())
        cpu = {name: after.cpu[name] - before.cpu[name] for name in after.cpu} | {"postgres": postgres}
        by_command = {
            name: calls - before.redis_commands.get(name, 0) - self.own_redis_commands.get(name, 0)
            for name, calls in after.redis_commands.items()
            if name not in ("info",)
        }
        self.own_redis_commands = {}
        return Cost(
            operations=1,
            seconds=after.at - before.at,
            cpu_ms={name: cpu[name] * 1000 for name in COMPONENTS},
            sql_statements=after.sql_statements - before.sql_statements,
            redis_commands=sum(by_command.values()),
            redis_scripts=sum(by_command.get(name, 0) for name in SCRIPT_COMMANDS),
            broker={label: after.broker.get(name, 0) - before.broker.get(name, 0) for label, name in BROKER_COUNTERS.items()},
            redis_by_command={name: calls for name, calls in by_command.items() if calls},
            notes={"postgres backends gone": len(gone)} if gone else {},
            outside_cpu_ms={name: cpu[name] * 1000 for name in self.outside},
        )


def per_operation(spent: Cost, *, baseline: Cost, operations: int) -> Cost:
    """``spent`` less what the idle deployment does in as long, divided by ``operations``."""
    scale = spent.seconds / baseline.seconds if baseline.seconds else 0.0

    def net(value: float, idle: float) -> float:
        return max(0.0, value - idle * scale) / operations

    return Cost(
        operations=operations,
        seconds=spent.seconds,
        cpu_ms={name: round(net(value, baseline.cpu_ms[name]), 3) for name, value in spent.cpu_ms.items()},
        sql_statements=round(net(spent.sql_statements, baseline.sql_statements), 2),
        redis_commands=round(net(spent.redis_commands, baseline.redis_commands), 2),
        redis_scripts=round(net(spent.redis_scripts, baseline.redis_scripts), 2),
        broker={name: round(net(value, baseline.broker[name]), 2) for name, value in spent.broker.items()},
        redis_by_command={
            name: round(net(calls, baseline.redis_by_command.get(name, 0)), 2)
            for name, calls in sorted(spent.redis_by_command.items(), key=lambda item: -item[1])
        },
        notes=spent.notes,
        outside_cpu_ms={
            name: round(net(value, baseline.outside_cpu_ms.get(name, 0.0)), 3) for name, value in spent.outside_cpu_ms.items()
        },
    )
