"""The embedded run's processes (``make run``, ``memoryproject/embedded.py``): gunicorn with one worker
process and one Celery worker on threads for both queues, with beat on a thread of that worker; the
allocator setting of its children; ``--var-dir``."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import fasteners
import psutil
import pytest
from django.conf import settings

from memoryproject import embedded
from tests.faults import CeleryWorker
from torture.processes import free_port, wait_until

BASE_FILE = Path(embedded.__file__).resolve()


def launcher(tmp_path: Path) -> embedded._Launcher:
    return embedded._Launcher(var_dir=tmp_path / "var", port=8123)


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_embedded_run_is_one_gunicorn_worker_and_one_celery_worker_with_beat(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_QUEUE", "q")
    monkeypatch.delenv("MEMORY_DERIVED_QUEUE", raising=False)

    web, worker = launcher(tmp_path)._child_specs()

    assert (web.name, worker.name) == ("web", "worker")
    assert option(web.argv, "--workers") == "1"
    assert option(web.argv, "--bind") == "127.0.0.1:8123"
    assert worker.argv[:4] == [sys.executable, "-m", "memoryproject.embedded", "worker-with-beat"]
    assert option(worker.argv, "-Q") == "q,q-derived"  # the write path's queue and derived memory's
    assert (option(worker.argv, "--pool"), option(worker.argv, "--concurrency")) == ("threads", "8")
    assert option(worker.argv, "--schedule-filename") == str(tmp_path / "var" / "celerybeat-schedule")
    assert [child.log_path.name for child in (web, worker)] == ["web.log", "worker.log"]


def test_the_children_return_freed_large_blocks_to_the_system_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("DJANGO_STATIC_ROOT", raising=False)
    run = launcher(tmp_path)
    run.var_dir.mkdir()

    env = run._child_env({"DATABASE_URL": "postgres://x", "REDIS_URL": "unix:///x", "CELERY_BROKER_URL": "redis+socket:///x"})

    assert env["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert env["DJANGO_STATIC_ROOT"] == str(tmp_path / "var" / "static")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert run._child_env({})["MALLOC_MMAP_THRESHOLD_"] == "131072"


def test_the_command_line_takes_a_var_dir_and_refuses_what_it_does_not_know(tmp_path, capsys):
    assert embedded.main(["stop", "--var-dir", str(tmp_path / "nothing-here")]) == 0
    assert embedded.main(["stop", "--var-dir"]) == 2
    assert embedded.main(["serve"]) == 2
    assert embedded.main(["run", "extra"]) == 2
    assert "usage: python -m memoryproject.embedded [run|stop] [--var-dir DIR]" in capsys.readouterr().err


class WorkerWithBeat(CeleryWorker):
    """The embedded run's worker (``worker-with-beat``) on the test broker."""

    kind = "celery-beat"

    def __init__(self, *, env: dict[str, str], schedule: Path) -> None:
        super().__init__(env=env, name="embedded")
        self.schedule = schedule

    def command(self) -> list[str]:
        return [
            "memoryproject.embedded",
            "worker-with-beat",
            "--loglevel",
            "INFO",
            "-Q",
            self.queue,
            "-n",
            f"embedded-{os.getpid()}@%h",
            "--pool",
            "threads",
            "--concurrency",
            "2",
            "--without-gossip",
            "--without-mingle",
            "--schedule-filename",
            str(self.schedule),
        ]


@pytest.mark.worker
@pytest.mark.timeout(120)
def test_beat_runs_on_a_thread_of_the_worker_which_runs_what_beat_sends(
    worker_env: dict[str, str], transactional_db: object, tmp_path: Path
) -> None:
    # On the test Redis as its broker, as the embedded run's is Redis, and queues of its own, so that
    # the suite's worker does not take the sweep beat sends; the lines of beat and of each task shown.
    queue = f"{settings.MEMORY_QUEUE}-beat"
    env = dict(worker_env, CELERY_BROKER_URL=settings.REDIS_URL, MEMORY_QUEUE=queue, MEMORY_DERIVED_QUEUE=f"{queue}-derived")
    env.update(DJANGO_LOG_LEVEL="INFO", CELERY_TASK_LOG_LEVEL="INFO")
    worker = WorkerWithBeat(env=env, schedule=tmp_path / "celerybeat-schedule")
    offset = worker.log_path.stat().st_size if worker.log_path.exists() else 0
    worker.start()
    try:
        assert worker.process is not None
        process = psutil.Process(worker.process.pid)
        assert process.children() == []  # neither a forked beat nor a pool process

        def log() -> str:
            return worker.log_path.read_text(errors="replace")[offset:]

        # cache-repair-sweep is due every 15 s: sent by the beat thread, run by the same process.
        wait_until(lambda: "Sending due task cache-repair-sweep" in log(), timeout=60, message="beat to send the sweep")
        wait_until(
            lambda: "conversations.tasks.cache_repair_sweep" in log() and "succeeded" in log(),
            timeout=30,
            message="the worker to run the sweep",
        )
        os.killpg(worker.process.pid, signal.SIGTERM)  # the launcher's stop: a warm shutdown
        assert worker.process.wait(timeout=30) == 0
        assert "beat: Shutting down" in log()
        assert any(tmp_path.glob("celerybeat-schedule*"))
    finally:
        worker.stop()


def test_the_launcher_started_with_dash_m_runs_on_as_a_plain_script(tmp_path: Path) -> None:
    """``python -m memoryproject.embedded`` imports the ``memoryproject`` package and its Celery app
    first: the launcher starts again as ``python -P .../embedded.py run``, which does not hold them."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    servers_lock = fasteners.InterProcessLock(str(var_dir / embedded.LOCK_FILE))
    servers_lock.acquire()  # the launcher waits there, before it starts a server
    launched = subprocess.Popen(
        [sys.executable, "-m", "memoryproject.embedded", "run", "--var-dir", str(var_dir)],
        cwd=embedded.BASE_DIR,
        env=dict(os.environ, PORT=str(free_port())),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        process = psutil.Process(launched.pid)
        wait_until(lambda: "-P" in process.cmdline(), timeout=30, message="the launcher to start again")
        assert process.cmdline()[1:] == ["-P", str(BASE_FILE), "run", "--var-dir", str(var_dir)]
    finally:
        launched.kill()
        launched.wait(timeout=10)
        servers_lock.release()


class ExitedProcess:
    """A child's process as the launcher polls it: running (None) or exited with ``returncode``."""

    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode

    def poll(self) -> int | None:
        return self.returncode


def supervised(tmp_path: Path, *, web: int | None, worker: int | None) -> embedded._Launcher:
    run = launcher(tmp_path)
    run.children = [
        embedded._Child(name=name, title=name, argv=[], log_path=tmp_path / f"{name}.log", proc=ExitedProcess(code))  # type: ignore[arg-type]
        for name, code in (("web", web), ("worker", worker))
    ]
    return run


def test_a_worker_that_dies_is_reported_once_and_the_web_process_serves_on(tmp_path, caplog):
    run = supervised(tmp_path, web=None, worker=-signal.SIGKILL)
    threading.Timer(1.6, run.stopping.set).start()  # Ctrl-C, after a few rounds of supervision

    assert run._supervise() == 0  # stopped by the signal, not by the worker's death
    reports = [record.getMessage() for record in caplog.records if "exited unexpectedly" in record.getMessage()]
    assert len(reports) == 1
    assert "worker (worker) exited unexpectedly (killed by SIGKILL)" in reports[0]
    assert "http://127.0.0.1:8123/admin/health/" in reports[0]


def test_a_web_process_that_dies_stops_everything(tmp_path, caplog):
    run = supervised(tmp_path, web=1, worker=None)

    assert run._supervise() == 1
    assert any("web (web) exited unexpectedly (exit code 1); its output" in r.getMessage() for r in caplog.records)
