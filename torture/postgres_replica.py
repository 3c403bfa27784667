"""A PostgreSQL primary and its streaming replica of our own, for the clustered topology and the
replica tests: both on free loopback ports, in one temporary directory, made with the ``pgserver``
wheel's binaries (the same PostgreSQL, with pgvector, that ``PrivatePostgres`` and ``make run`` use).

The replica is a hot standby cloned with ``pg_basebackup -R`` (``wal_level replica``, a physical
stream). As root, both servers run as pgserver's own system user "pgserver", as the embedded server
does (PostgreSQL refuses to run as root).

``PrivatePostgresPair`` stands in for ``PrivatePostgres`` in the torture harness: ``url`` is the
primary's, ``start()`` / ``stop()`` / ``close()`` act as there (``stop()`` stops the primary only, the
single-node "PostgreSQL stopped" fault), and ``kill_replica(rng)`` is the replica's own fault.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

from torture.processes import free_port, wait_until

SUPERUSER = DATABASE = "postgres"
START_TIMEOUT = 60  # seconds: a replica replaying the WAL it had received before it was killed
# Settings of both servers (the replica's configuration is cloned from the primary's).
SHARED_SETTINGS = """
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
wal_level = replica
max_wal_senders = 10
wal_keep_size = '512MB'
hot_standby = on
hot_standby_feedback = on
wal_retrieve_retry_interval = '500ms'
wal_receiver_status_interval = '1s'
max_connections = 200
fsync = off
"""


def _binaries() -> Path:
    from memoryproject import embedded

    return Path(embedded._pgserver().__file__).parent / "pginstall" / "bin"


class PrivatePostgresPair:
    """A primary and a streaming hot-standby replica on loopback free ports, own directories."""

    def __init__(self, *, log_statements: bool = False) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="memtest-pgpair-"))
        self.primary_dir = self.directory / "primary"
        self.replica_dir = self.directory / "replica"
        self.primary_port = free_port()
        self.replica_port = free_port()
        self.log_statements = log_statements  # the replica logs every statement it runs (tests)
        self.system_user = "pgserver" if os.geteuid() == 0 else None
        self.bin = _binaries()

    # --- What the harness and the service are given ---------------------------------------------

    @property
    def url(self) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.primary_port}/{DATABASE}"

    @property
    def replica_url(self) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.replica_port}/{DATABASE}"

    @property
    def replica_log(self) -> Path:
        return self.directory / "replica.log"

    def service_env(self) -> dict[str, str]:
        return {"DATABASE_URL": self.url, "DATABASE_REPLICA_URL": self.replica_url}

    # --- Life cycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Create both servers the first time; afterwards start whichever is not running."""
        if not (self.primary_dir / "PG_VERSION").exists():
            self._create()
        self._ensure_running(self.primary_dir, self.primary_port, self.directory / "primary.log")
        self._ensure_running(self.replica_dir, self.replica_port, self.replica_log)
        self.wait_streaming()

    def stop(self) -> None:
        """Stop the primary (the replica keeps serving what it has and reconnects when it is back)."""
        self._pg_ctl(self.primary_dir, "-m", "fast", "-w", "-t", "30", "stop", check=False)

    def heal(self) -> None:
        """Both servers running, the replica streaming and replaying (safe to call twice)."""
        self.start()
        self.resume_replay()

    def close(self) -> None:
        for data in (self.replica_dir, self.primary_dir):
            if (data / "PG_VERSION").exists():
                self._pg_ctl(data, "-m", "immediate", "-w", "-t", "20", "stop", check=False)
                self._kill_all(data)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _create(self) -> None:
        if self.system_user is not None:
            from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

            ensure_user_exists(self.system_user)
            ensure_prefix_permissions(self.directory)
            ensure_prefix_permissions(self.bin)
            ensure_folder_permissions(self.bin, 0o555)
            ensure_folder_permissions(self.bin.parent / "lib", 0o444)
            self.directory.chmod(0o755)
            shutil.chown(self.directory, self.system_user, self.system_user)
        self._run("initdb", "-D", str(self.primary_dir), "-U", SUPERUSER, "--auth=trust", "--encoding=utf8")
        with open(self.primary_dir / "postgresql.conf", "a") as conf:
            conf.write(SHARED_SETTINGS)
        self._ensure_running(self.primary_dir, self.primary_port, self.directory / "primary.log")
        self._run(
            "pg_basebackup",
            *("-h", "127.0.0.1", "-p", str(self.primary_port), "-U", SUPERUSER),
            *("-D", str(self.replica_dir), "-R", "-X", "stream", "-c", "fast"),
        )

    def _ensure_running(self, data: Path, port: int, log: Path) -> None:
        if self._postmaster(data) is not None:
            return
        self._kill_all(data)  # children of a killed postmaster hold its shared memory
        options = f"-p {port}"
        if data == self.replica_dir and self.log_statements:
            options += " -c log_statement=all"
        self._pg_ctl(data, "-w", "-t", str(START_TIMEOUT), "-l", str(log), "-o", options, "start")

    def _postmaster(self, data: Path) -> psutil.Process | None:
        try:
            pid = int((data / "postmaster.pid").read_text().split()[0])
            process = psutil.Process(pid)
            return process if process.is_running() and process.status() != psutil.STATUS_ZOMBIE else None
        except (OSError, ValueError, IndexError, psutil.Error):
            return None

    def _kill_all(self, data: Path) -> None:
        """SIGKILL every process of the server on ``data`` (the postmaster and its children)."""
        for process in psutil.process_iter(["cmdline", "ppid"]):
            cmdline = process.info["cmdline"] or []
            if str(data) in cmdline:
                for victim in [process, *process.children(recursive=True)]:
                    try:
                        victim.send_signal(signal.SIGKILL)
                    except psutil.Error:
                        pass

        def gone() -> bool:
            return not any(str(data) in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))

        wait_until(gone, timeout=20, message=f"the PostgreSQL processes on {data} to exit")

    def _run(self, program: str, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(self.bin / program), *arguments],
            user=self.system_user,
            cwd=self.directory,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT + 30,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(arguments)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
        return result

    def _pg_ctl(self, data: Path, *arguments: str, check: bool = True) -> None:
        self._run("pg_ctl", "-D", str(data), *arguments, check=check)

    # --- Asking the servers ------------------------------------------------------------------------

    def query(self, sql: str, *, replica: bool = False) -> tuple | None:
        """The first row of ``sql`` on the primary (or the replica); None for a statement without rows."""
        with psycopg.connect(self.replica_url if replica else self.url, autocommit=True, connect_timeout=2) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchone() if cursor.description is not None else None

    def _answers(self, *, replica: bool) -> bool:
        try:
            self.query("SELECT 1", replica=replica)
            return True
        except psycopg.Error:
            return False

    def streaming(self) -> bool:
        """Whether the replica answers and receives the primary's stream."""
        try:
            row = self.query("SELECT status FROM pg_stat_wal_receiver", replica=True)
        except psycopg.Error:
            return False
        return row is not None and row[0] == "streaming"

    def wait_streaming(self, timeout: float = START_TIMEOUT) -> None:
        wait_until(self.streaming, timeout=timeout, message="the replica to stream from the primary")

    def caught_up(self) -> bool:
        """Whether the replica has replayed everything the primary has written so far."""
        try:
            (primary,) = self.query("SELECT pg_current_wal_lsn()::text")
            (replayed,) = self.query(f"SELECT pg_last_wal_replay_lsn() >= '{primary}'::pg_lsn", replica=True)
        except psycopg.Error:
            return False
        return bool(replayed)

    def wait_caught_up(self, timeout: float = 30) -> None:
        wait_until(self.caught_up, timeout=timeout, message="the replica to replay the primary's WAL")

    def pause_replay(self) -> None:
        """The replica keeps receiving WAL but applies none of it: it lags as far as the test likes."""
        self.query("SELECT pg_wal_replay_pause()", replica=True)
        wait_until(
            lambda: self.query("SELECT pg_get_wal_replay_pause_state()", replica=True)[0] == "paused",
            timeout=10,
            message="the replica's replay to pause",
        )

    def resume_replay(self) -> None:
        if self._answers(replica=True):
            self.query("SELECT pg_wal_replay_resume()", replica=True)

    # --- The replica's fault -----------------------------------------------------------------------

    def kill_replica(self, rng: random.Random) -> str:
        """SIGKILL the replica (postmaster and backends), keep it down a few seconds while the service
        reads, start it again and wait until it streams from the primary."""
        down = rng.uniform(2.0, 4.0)
        self._kill_all(self.replica_dir)
        killed = time.monotonic()
        time.sleep(down)
        self._ensure_running(self.replica_dir, self.replica_port, self.replica_log)
        self.wait_streaming()
        return f"PostgreSQL replica SIGKILLed, down {down:.1f} s, streaming again {time.monotonic() - killed - down:.1f} s after its start"
