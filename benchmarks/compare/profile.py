"""Where the hot operations spend their CPU: py-spy on gunicorn and on the persist worker under HTTP load.

``python -m benchmarks.compare.profile`` starts gunicorn and a Celery persist worker as the HTTP benchmark
does (``benchmarks/compare/http.py``), fills a few conversations, then drives window reads and durable
appends at ``--clients`` concurrent clients. During each phase py-spy samples every gunicorn worker and
the Celery worker, only the thread that holds the GIL (``--gil``): the Python CPU of each process,
without the threads that wait for a socket or for the GIL. It prints, per phase and process, the share
of samples of the functions seen most often (inclusive) and of the ones where the samples were taken
(own), and keeps py-spy's raw stacks (flame graph input) under ``test-artifacts/profiles/``.

Sampling adds little to what it measures (py-spy reads the processes' memory from outside them), but
the shares are of CPU samples, not of wall time: a request waiting on Redis costs nothing here. py-spy
needs ptrace rights over the processes it samples (root, or the same user with ptrace allowed).

    DATABASE_URL=postgres://.../<bench db> REDIS_URL=redis://127.0.0.1:6379/<n> MEMORY_QUEUE=<bench queue> \\
        .venv/bin/python -m benchmarks.compare.profile [--clients 16] [--requests 6000] [--top 30]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.database import standalone_setup

ARTIFACTS = Path("test-artifacts") / "profiles"
SAMPLES_PER_SECOND = 400
# Frames where a thread that holds no work waits: not CPU, left out of the shares.
IDLE_LEAVES = ("Condition.wait", "Event.wait", "_epoll.poll", "_worker (concurrent/futures/thread.py)")


@dataclass
class Profile:
    """The stacks py-spy sampled in one process during one phase, folded by function."""

    samples: int = 0
    service: Counter[str] = field(default_factory=Counter)  # the service's own functions, inclusive
    own: Counter[str] = field(default_factory=Counter)  # the function a sample was taken in

    def table(self, *, top: int) -> str:
        if not self.samples:
            return "    (no samples: the process was idle, or py-spy could not read it)"
        lines = [f"    {self.samples:,} samples. The service's functions, with what they call:"]
        lines += [f"    {100 * count / self.samples:5.1f}%  {name}" for name, count in self.service.most_common(top)]
        lines.append("    Where the samples were taken (own time):")
        lines += [f"    {100 * count / self.samples:5.1f}%  {name}" for name, count in self.own.most_common(top // 2)]
        return "\n".join(lines)


_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>.*?)(:\d+)?\)$")
# py-spy names a file from the entry of sys.path it was found under: the service's start with its package.
SERVICE_PACKAGES = frozenset(
    ("conversations", "tenants", "core", "memoryproject", "search", "memory", "store", "chat", "facts", "summaries")
    + ("checkpoints", "extraction", "mcp_server")
)


def _frame(frame: str) -> tuple[str, bool]:
    """A frame as ``function (path)``, without its line, and whether it is the service's code."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, False
    path = match["path"].split("/site-packages/")[-1]
    return f"{match['function']} ({path})", path.split("/")[0] in SERVICE_PACKAGES


def fold(raw: Path) -> Profile:
    """Fold py-spy's raw output (``frame;frame;... count`` per line) into shares by function; samples
    taken where an idle thread waits are left out."""
    profile = Profile()
    if not raw.exists():
        return profile
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        frames = [_frame(frame) for frame in stack.split(";") if frame and not frame.startswith("process ")]
        if not frames or frames[-1][0].startswith(IDLE_LEAVES):
            continue
        count = int(count_text)
        profile.samples += count
        for name in {name for name, service in frames if service}:
            profile.service[name] += count
        profile.own[frames[-1][0]] += count
    return profile


class Spy:
    """``py-spy record`` of one process (and its children) for as long as the block runs."""

    def __init__(self, *, pid: int, output: Path, children: bool = False) -> None:
        executable = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        command = [executable, "record", "--pid", str(pid), "--gil", "--rate", str(SAMPLES_PER_SECOND)]
        command += ["--format", "raw", "--output", str(output), "--nonblocking"]
        if children:
            command.append("--subprocesses")
        self.command = command
        self.output = output
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Spy:
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)  # py-spy writes what it sampled on SIGINT
        try:
            _, error = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, error = self.process.communicate()
        if not self.output.exists():
            message = error.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            print(f"WARNING: py-spy wrote no profile ({self.command[0]}): {message[0]}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare.profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--requests", type=int, default=6_000, help="requests per phase")
    parser.add_argument("--conversations", type=int, default=20, help="conversations of 100 messages to read and append to")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--top", type=int, default=30, help="functions shown per process")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    standalone_setup()
    import aiohttp

    from benchmarks.compare import http
    from torture.processes import CeleryWorker, wait_until

    rng = random.Random(1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    api_key, key = None, ""
    web = http.BenchWebServer(
        env=http.service_env(log_level="WARNING"), name="bench-profile", workers=options.workers, threads=options.threads
    )
    worker = CeleryWorker(env=http.service_env(log_level="WARNING"), name="bench-profile", **http.WRITE_WORKER)
    phases = {
        "window read": (lambda conversations: http.read_requests(conversations, count=options.requests, rng=rng), 200),
        "append (durable)": (lambda conversations: http.append_requests(conversations, count=options.requests, rng=rng), 201),
    }
    try:
        worker.start()
        conversations, _ = http.fill(count=options.conversations, long=100, rng=rng)
        wait_until(
            http._persisted(conversation_ids=conversations, expected=100 * len(conversations)),
            timeout=http.PERSIST_TIMEOUT,
            message="the filled conversations to be persisted",
        )
        api_key, key = http.api_key_for()
        web.start()

        async def drive(requests: list[http.Request], expected: int, label: str) -> http.Load:
            connector = aiohttp.TCPConnector(limit=options.clients * 2, keepalive_timeout=1.0)
            headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"}
            async with aiohttp.ClientSession(web.url, connector=connector, headers=headers) as session:
                return await http.drive(session, requests=requests, clients=options.clients, expected=expected, label=label)

        for name, (make, expected) in phases.items():
            asyncio.run(drive(make(conversations)[: http.WARM_UP], expected, "warm-up"))
            http.wait_for_quiet_worker(worker.log_path)
            slug = name.split()[0]
            web_raw, worker_raw = ARTIFACTS / f"{slug}-gunicorn.txt", ARTIFACTS / f"{slug}-celery.txt"
            for path in (web_raw, worker_raw):
                path.unlink(missing_ok=True)
            with Spy(pid=web.process.pid, output=web_raw, children=True), Spy(pid=worker.process.pid, output=worker_raw):
                load = asyncio.run(drive(make(conversations), expected, f"{name} x{options.clients}"))
                if expected == 201:
                    http.wait_for_quiet_worker(worker.log_path)  # the worker's share of the appends, sampled too
            http.report_failures(load, label=name)
            print(f"\n## {name}, {options.clients} clients: {len(load.samples) / load.elapsed:,.0f} requests/s")
            print(f"  gunicorn ({web.description}):\n{fold(web_raw).table(top=options.top)}")
            print(f"  Celery persist worker:\n{fold(worker_raw).table(top=options.top)}")
        print(f"\nRaw stacks (flame graph input): {ARTIFACTS}/")
    finally:
        web.stop()
        worker.stop()
        if api_key is not None:
            from tenants import services as tenant_services

            tenant_services.api_key_revoke(api_key=api_key)
        http.purge_derived_queue()
    return 0


if __name__ == "__main__":
    sys.exit(main())
