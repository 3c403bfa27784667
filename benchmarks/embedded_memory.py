"""The embedded run's memory: every process of ``make run``, resident after the README's quick start.

``python -m benchmarks.embedded_memory`` starts ``python -m memoryproject.embedded`` on a scratch
directory (``--var-dir``, under the temporary directory) and a free port, so that it disturbs neither
``var/`` nor a ``make run`` serving on port 8000. Once gunicorn answers and every Celery worker of
the run is ready, it runs the README's quick start as written (its ```bash blocks, the address changed to the
free port, from a folder whose ``var/demo-api-key.txt`` is the scratch run's key) except the erase
at its end, then puts and searches an item of the store (its embedding computed while the put is
answered), waits until derived memory has embedded every message (the user's
``search/status`` says ``searchable``), searches again, runs the erase, and lets the run settle.

It then prints the RSS and PSS (``/proc/PID/smaps_rollup``: shared pages divided among the processes
sharing them) of each process of the run: the launcher, gunicorn's master and workers, each Celery
worker with its pool children if it has any, beat wherever it runs, and the embedded PostgreSQL (the
postmaster, its background processes and one backend per open connection) and Redis, which are
daemons of their own, not the launcher's children. Each group's figure is ``benchmarks.compare.http``'s
``resident_mb`` of the group's root (a process and all its descendants), as the HTTP benchmark
reports gunicorn and the worker. The total is the sum over every process, against the target: under
``TARGET_MB`` of RSS in total. RSS counts a page shared by several processes (a forked worker's
copy-on-write pages, PostgreSQL's shared buffers) once in each; PSS counts it once in all.

At the end it stops the launcher (which stops its processes and the servers it started) and removes
the scratch directory (``--keep`` leaves it, with the launcher's output in ``launcher.log`` and each
process's in ``var/log/``).

    .venv/bin/python -m benchmarks.embedded_memory [--settle 5] [--timeout 300] [--json PATH] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from benchmarks.compare.http import resident_mb

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCUMENTED_ADDRESS = "http://127.0.0.1:8000"
QUICK_START = "## Quick start"
USER_ID = "u-42"  # the quick start's user
TARGET_MB = 900.0  # RSS of every process of the run, in total
START_TIMEOUT = 180.0  # seconds: a first run creates the database (initdb) and migrates it
STOP_TIMEOUT = 60.0  # seconds for the launcher to stop its processes and the servers


@dataclass
class Row:
    """One process of the run and its memory, in MB."""

    group: str
    name: str
    pid: int
    rss_mb: float
    pss_mb: float


# --- The run -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EmbeddedRun:
    """``python -m memoryproject.embedded run --var-dir <scratch>/var`` on a free port."""

    def __init__(self, *, scratch: Path, port: int) -> None:
        self.scratch = scratch
        self.var_dir = scratch / "var"
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = scratch / "launcher.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float) -> None:
        env = dict(os.environ, PORT=str(self.port))
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memoryproject.embedded", "run", "--var-dir", str(self.var_dir)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our Ctrl-C reaches only us; stop() stops it in order
            )
        deadline = time.monotonic() + timeout
        while not (self._answers() and self._workers_ready()):
            if self.process.poll() is not None:
                raise RuntimeError(f"the embedded run exited while starting (code {self.process.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the embedded run was not ready within {timeout:.0f}s:\n{self.tail()}")
            time.sleep(0.5)

    def _answers(self) -> bool:
        if not (self.var_dir / "demo-api-key.txt").exists():
            return False
        try:
            return httpx.get(f"{self.base}/healthz", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _workers_ready(self) -> bool:
        """Every Celery worker of the run has said "ready." in its log (var/log/*.log)."""
        logs = sorted((self.var_dir / "log").glob("*.log"))
        workers = [path for path in logs if {"worker", "worker-with-beat"} & set(_first_line(path).split())]
        return bool(workers) and all(" ready." in path.read_text(errors="replace") for path in workers)

    @property
    def key(self) -> str:
        return (self.var_dir / "demo-api-key.txt").read_text().strip()

    def tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the launcher's Ctrl-C: children, then its servers
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        # Whatever is left (the launcher killed before it stopped them): the servers under our directory.
        subprocess.run(
            [sys.executable, "-m", "memoryproject.embedded", "stop", "--var-dir", str(self.var_dir)],
            cwd=ROOT,
            capture_output=True,
            timeout=STOP_TIMEOUT,
        )


def _first_line(path: Path) -> str:
    with contextlib.suppress(OSError), path.open(errors="replace") as stream:
        return stream.readline()
    return ""


# --- The quick start -----------------------------------------------------------------------------


def quick_start_blocks(text: str) -> list[str]:
    """The ```bash blocks of the README's quick start, in order (as ``tests/docs/test_readme.py`` reads them)."""
    start = text.index(QUICK_START)
    end = text.find("\n## ", start + len(QUICK_START))
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"^```bash\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def run_blocks(blocks: list[str], *, run: EmbeddedRun) -> None:
    """The blocks in one bash, in order, from the scratch folder (whose var/ holds the key)."""
    script = "set -euo pipefail\n" + "\n".join(block.replace(DOCUMENTED_ADDRESS, run.base) for block in blocks)
    result = subprocess.run(["bash", "-c", script], cwd=run.scratch, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"a quick start block failed (exit code {result.returncode}):\n{result.stdout}\n{result.stderr}")


def quick_start(run: EmbeddedRun, *, timeout: float) -> None:
    blocks = quick_start_blocks(README.read_text())
    erase = [block for block in blocks if "-X DELETE" in block]
    run_blocks([block for block in blocks if block not in erase], run=run)
    with httpx.Client(base_url=f"{run.base}/api/v1", headers={"Authorization": f"Api-Key {run.key}"}, timeout=30.0) as api:
        item = {"namespace": ["users", USER_ID], "key": "prefs", "value": {"text": "Likes quiet bars with vermouth near Sol"}}
        api.put("/store/items/", json=item).raise_for_status()
        api.post("/store/search/", json={"namespace_prefix": ["users"], "query": "vermouth bars"}).raise_for_status()
        wait_until_embedded(api, timeout=timeout)
        api.post(f"/users/{USER_ID}/search/", json={"q": "bars near Sol", "top_k": 5}).raise_for_status()
    run_blocks([block for block in blocks if "curl " not in block] + erase, run=run)  # its variables, then the erase


def wait_until_embedded(api: httpx.Client, *, timeout: float) -> None:
    """Until the derived-memory worker has persisted and embedded every message of the user."""
    deadline = time.monotonic() + timeout
    while True:
        status = api.get(f"/users/{USER_ID}/search/status/").raise_for_status().json()
        if status.get("searchable") and status.get("embedded"):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the messages were not embedded within {timeout:.0f}s: {status}")
        time.sleep(0.5)


# --- Memory --------------------------------------------------------------------------------------


def process_mb(process: psutil.Process) -> tuple[float, float]:
    """RSS and PSS of one process, in MB (as ``resident_mb`` counts them)."""
    memory = process.memory_full_info()
    return round(memory.rss / 2**20, 1), round(getattr(memory, "pss", memory.rss) / 2**20, 1)


def name_of(process: psutil.Process) -> str:
    """What a process of the run is, from its command line."""
    argv = process.cmdline()
    line = " ".join(argv)
    parent = process.parent()
    parent_line = " ".join(parent.cmdline()) if parent is not None else ""
    if "gunicorn" in line:
        return "gunicorn worker" if "gunicorn" in parent_line else "gunicorn master"
    if "-Q" in argv and argv.index("-Q") + 1 < len(argv):  # a Celery worker: what its queues are for
        queues = argv[argv.index("-Q") + 1].split(",")
        roles = ["derived memory" if queue.endswith("-derived") else "write path" for queue in queues]
        roles += ["beat thread"] if "worker-with-beat" in argv else []
        kind = "celery pool child" if "-Q" in parent_line else "celery worker"
        return f"{kind} ({', '.join(roles)})"
    if "celery" in line and " beat" in line:
        return "celery beat"
    if "memoryproject.embedded" in line or "embedded.py" in line:
        return "launcher"
    if argv and argv[0].startswith("postgres:"):
        title = argv[0].removeprefix("postgres:").strip()
        return "postgres backend" if "[local]" in title else f"postgres {title}"
    if argv and argv[0].endswith("/postgres"):
        return "postgres postmaster"
    if "redis-server" in line:
        return "redis-server"
    return process.name()


GROUPS = {"gunicorn master": "gunicorn", "postgres postmaster": "postgres"}  # a group is named after its root


def memory_rows(run: EmbeddedRun) -> tuple[list[Row], dict[str, tuple[float, float]]]:
    """Each process of the run, and each group's (RSS, PSS) from ``resident_mb`` of its root."""
    assert run.process is not None
    launcher = psutil.Process(run.process.pid)
    state = json.loads((run.var_dir / "embedded.json").read_text())
    servers = [psutil.Process(state["postgres"]["pid"]), psutil.Process(state["redis"]["pid"])]
    roots = [(name_of(root), root) for root in (launcher, *launcher.children(), *servers)]
    roots = [(GROUPS.get(name, name), root) for name, root in roots]
    rows: list[Row] = []
    groups: dict[str, tuple[float, float]] = {}
    for group, root in roots:
        # The launcher's children are groups of their own; the other roots' descendants are theirs.
        members = [root] if root.pid == launcher.pid else [root, *root.children(recursive=True)]
        for process in members:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                rss, pss = process_mb(process)
                rows.append(Row(group=group, name=name_of(process), pid=process.pid, rss_mb=rss, pss_mb=pss))
        if len(members) > 1:
            groups[group] = resident_mb(root.pid)
    return rows, groups


def report(rows: list[Row], groups: dict[str, tuple[float, float]]) -> dict[str, Any]:
    total_rss = round(sum(row.rss_mb for row in rows), 1)
    total_pss = round(sum(row.pss_mb for row in rows), 1)
    width = max(len(row.name) for row in rows) + 2
    print(f"\n{'process':<{width}} {'pid':>8} {'RSS MB':>9} {'PSS MB':>9}")
    current = None
    for row in rows:
        if row.group != current:
            current = row.group
            members = [r for r in rows if r.group == current]
            if len(members) > 1:
                rss, pss = groups[current]
                print(f"{f'{current}, {len(members)} processes':<{width}} {'':>8} {rss:>9.1f} {pss:>9.1f}")
        indent = "  " if len([r for r in rows if r.group == row.group]) > 1 else ""
        print(f"{indent + row.name:<{width}} {row.pid:>8} {row.rss_mb:>9.1f} {row.pss_mb:>9.1f}")
    met = total_rss < TARGET_MB
    print("-" * (width + 29))
    print(f"{f'total ({len(rows)} processes)':<{width}} {'':>8} {total_rss:>9.1f} {total_pss:>9.1f}")
    print(f"target: under {TARGET_MB:.0f} MB of RSS in total: {'met' if met else 'NOT met'} ({total_rss:.0f} MB)")
    return {
        "processes": [asdict(row) for row in rows],
        "groups": {name: {"rss_mb": rss, "pss_mb": pss} for name, (rss, pss) in groups.items()},
        "total_rss_mb": total_rss,
        "total_pss_mb": total_pss,
        "target_rss_mb": TARGET_MB,
        "target_met": met,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedded_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between the quick start's end and the measure")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to start, and to wait for the embeddings")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="leave the scratch directory (logs, data) in place")
    options = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="embedded-memory-"))
    run = EmbeddedRun(scratch=scratch, port=free_port())
    try:
        print(f"starting the embedded run on port {run.port} in {scratch} ...", flush=True)
        started = time.monotonic()
        run.start(timeout=max(options.timeout, START_TIMEOUT))
        print(f"serving after {time.monotonic() - started:.1f}s; running the README's quick start ...", flush=True)
        quick_start(run, timeout=options.timeout)
        time.sleep(options.settle)
        rows, groups = memory_rows(run)
        figures = report(rows, groups)
    except Exception:
        print(run.tail(), file=sys.stderr)
        raise
    finally:
        run.stop()
        if options.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
