"""``python -m torture``: the list-append torture test (DESIGN.md section 5 under faults).

Starts a private PostgreSQL, Redis and RabbitMQ, gunicorn and two Celery workers; runs concurrent
clients that append unique, labelled messages to conversations of several tenants and read windows
back, while a nemesis injects faults on a schedule; then heals everything, waits for the queue to
drain, and checks the history against PostgreSQL and the cache (``torture/checker.py``). Prints a
table and exits 1 if any count that must be zero is not.

    .venv/bin/python -m torture [--duration 90] [--clients 8] [--tenants 3] [--conversations 4]
        [--faults kill-worker-process,kill-worker,kill-web-worker,redis-restart-empty,redis-pause,postgres-stop,rabbitmq-restart]
        [--interval 4] [--seed 1] [--json PATH]

The machine's own services are never touched: every server here is started by the harness, on its
own ports and directories, and stopped at the end. Needs the machine's ``rabbitmq-server``.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import threading
import time
from pathlib import Path

from torture.checker import FINAL_WINDOW, MUST_BE_ZERO, Report, Row, check
from torture.cluster import FAULTS, Cluster
from torture.workload import Client, History

DRAIN_TIMEOUT = 180.0  # seconds to wait after the faults for every acknowledged write to be persisted


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m torture", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=90.0, help="seconds of workload under faults")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tenants", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=4, help="per tenant")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, in schedule order: {', '.join(FAULTS)}")
    parser.add_argument("--interval", type=float, default=4.0, help="seconds of calm between two faults")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    options = parser.parse_args(argv)
    options.fault_names = [name.strip() for name in options.faults.split(",") if name.strip()]
    unknown = [name for name in options.fault_names if name not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {', '.join(unknown)}; choose among {', '.join(FAULTS)}")
    return options


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def nemesis(
    cluster: Cluster,
    names: list[str],
    interval: float,
    stop: threading.Event,
    rng: random.Random,
    log: list[str],
    forgotten: list[float],
    unreachable: list[tuple[float, float]],
) -> None:
    """Break one thing at a time, in the order given, round and round, with calm in between."""
    index = 0
    stop.wait(interval)
    while not stop.is_set() and names:
        name = names[index % len(names)]
        index += 1
        started = time.time()
        try:
            if name == "redis-restart-empty":
                forgotten.append(time.time())
            what = FAULTS[name](cluster, rng)
            if name == "redis-pause":
                unreachable.append((started, time.time()))
        except Exception as error:  # a fault that failed half-way: heal and go on
            what = f"{name} failed: {error!r}"
            cluster.heal()
        entry = f"{time.strftime('%H:%M:%S', time.localtime(started))} {name}: {what} ({time.time() - started:.1f} s)"
        log.append(entry)
        say(f"nemesis  {entry}")
        stop.wait(interval)


def drain(cluster: Cluster, history: History) -> None:
    """Wait until every acknowledged message is in PostgreSQL and the queue has stayed empty a while."""
    from django.db import DatabaseError, connections

    from conversations.models import Message

    wanted = {message_id for append in history.appends if append.outcome == "ok" for message_id in append.ids}
    deadline = time.monotonic() + DRAIN_TIMEOUT
    quiet_since = None
    stored: set[str] = set()
    while time.monotonic() < deadline:
        try:
            stored = set(
                map(str, Message.unscoped.filter(tenant__slug__startswith="torture-").values_list("message_id", flat=True))
            )  # every tenant of the run
        except DatabaseError:  # our connection did not survive a PostgreSQL restart
            connections.close_all()
            time.sleep(0.5)
            continue
        depth = queue_depth(cluster)
        if wanted <= stored and depth == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 3:
                return
        else:
            quiet_since = None
        time.sleep(0.5)
    say(f"drain: timed out after {DRAIN_TIMEOUT:.0f} s; {len(wanted - stored)} acknowledged messages not persisted")


def queue_depth(cluster: Cluster) -> int:
    from kombu import Connection

    try:
        with Connection(cluster.rabbit.url, connect_timeout=2) as connection:
            _, depth, _ = connection.default_channel.queue_declare(cluster.env["MEMORY_QUEUE"], passive=True)
            return depth
    except Exception:  # the broker restarting: not drained
        return -1


def collect(cluster: Cluster) -> tuple[list[Row], dict[tuple[str, str], list[tuple[str, int]]]]:
    import httpx

    from conversations.models import Message

    rows = [
        Row(tenant, conversation, str(message_id), seq, content, persisted_at.timestamp())
        for tenant, conversation, message_id, seq, content, persisted_at in Message.unscoped.filter(  # every tenant of the run
            tenant__slug__startswith="torture-"
        ).values_list("tenant__slug", "conversation__conversation_id", "message_id", "seq", "content", "persisted_at")
    ]
    windows = {}
    with httpx.Client(base_url=cluster.web.url, timeout=30) as http:
        for tenant in cluster.tenants:
            conversations = {row.conversation for row in rows if row.tenant == tenant.slug}
            for conversation in conversations:
                response = http.get(
                    f"/api/v1/conversations/{conversation}/messages/",
                    params={"limit": FINAL_WINDOW},
                    headers={"Authorization": f"Api-Key {tenant.key}"},
                )
                response.raise_for_status()
                windows[(tenant.slug, conversation)] = [(m["id"], m["seq"]) for m in response.json()["messages"]]
    return rows, windows


def print_report(report: Report, seconds: float) -> None:
    print()
    print("| figure | count |\n|---|---:|")
    for name in (
        "acknowledged",
        "failed",
        "unknown",
        "unknown_stored",
        "failed_but_stored",
        "stored",
        "reads",
        "reads_from_cache",
    ):
        print(f"| {name} | {getattr(report, name)} |")
    for name in MUST_BE_ZERO:
        print(f"| **{name}** (must be 0) | {getattr(report, name)} |")
    print(f"| max lag, acknowledgement to row (s) | {report.max_lag_seconds} |")
    print(f"\n{len(report.faults)} faults in {seconds:.0f} s; verdict: {'PASS' if report.ok else 'FAIL'}")
    for kind, examples in report.examples.items():
        print(f"  {kind}: " + "; ".join(examples))


def main(argv: list[str] | None = None) -> int:
    options = arguments(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out, as on Ctrl-C
    rng = random.Random(options.seed)
    cluster = Cluster(tenant_count=options.tenants)
    say("starting PostgreSQL, Redis, RabbitMQ, gunicorn and two Celery workers …")
    try:
        cluster.start()
        say(f"up: {cluster.web.url}, tenants {', '.join(t.slug for t in cluster.tenants)}")
        history = History()
        stop_clients, stop_nemesis = threading.Event(), threading.Event()
        clients = [
            Client(
                number=number,
                base_url=cluster.web.url,
                tenants=cluster.tenants,
                conversations=options.conversations,
                history=history,
                stop=stop_clients,
                seed=options.seed * 1000 + number,
            )
            for number in range(options.clients)
        ]
        faults: list[str] = []
        forgotten: list[float] = []
        unreachable: list[tuple[float, float]] = []
        chaos = threading.Thread(
            target=nemesis,
            args=(cluster, options.fault_names, options.interval, stop_nemesis, rng, faults, forgotten, unreachable),
            daemon=True,
        )
        began = time.time()
        for client in clients:
            client.start()
        chaos.start()
        while (left := options.duration - (time.time() - began)) > 0:
            time.sleep(min(10.0, left))
            say(f"workload {time.time() - began:.0f} s: {len(history.appends)} appends, {len(history.reads)} reads")
        stop_nemesis.set()
        chaos.join(timeout=120)
        stop_clients.set()
        for client in clients:
            client.join(timeout=30)
        seconds = time.time() - began
        say("healing and draining the queue …")
        cluster.heal()
        drain(cluster, history)
        rows, windows = collect(cluster)
        report = check(history=history, rows=rows, final_windows=windows, forgotten_at=forgotten, unreachable=unreachable)
        report.faults = faults
        print_report(report, seconds)
        if options.json:
            options.json.write_text(json.dumps(report.as_dict(), indent=2))
        return 0 if report.ok else 1
    finally:
        say("stopping the servers …")
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
