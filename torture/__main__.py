"""``python -m torture``: the list-append torture test (the write path's promises under faults).

Starts a private PostgreSQL, Redis and RabbitMQ, gunicorn and two Celery workers; runs concurrent
clients of several kinds (``torture/workload.py``) that append unique, labelled messages to
conversations of several tenants, retry in flight, resend what was acknowledged, send poison and
read windows back, while a nemesis injects faults on a schedule; then heals everything, waits for
the queue to drain, stops the workers, reads what the broker still holds and the dead-letter table,
and checks the history against them, PostgreSQL and the cache (``torture/checker.py``). Prints a
table and exits 1 if any count that must be zero is not.

    .venv/bin/python -m torture [--topology single|cluster] [--duration 90] [--clients 8] [--tenants 3]
        [--conversations 4] [--faults NAME,...|none] [--interval 4] [--ids uuid7|uuid4] [--seeds 1,2,3] [--json PATH]
        [--retry-backoff-max S] [--persist-max-retries N] [--drain-timeout S] [--serve]

``--topology cluster`` starts each engine on several nodes instead (a Redis Cluster of three primaries
with a replica each, three RabbitMQ nodes with quorum queues, a PostgreSQL primary with a streaming
replica), and its schedule kills nodes of each engine, alone and two engines at once. ``--serve``
starts the topology, prints the service's URL and the tenants' keys, and keeps it running under the
nemesis for a workload of one's own, until Ctrl-C.

Several seeds run one after the other, each on a fresh cluster (a process of its own). The service
runs with its own retry settings unless ``--retry-backoff-max`` or ``--persist-max-retries`` says
otherwise; the drain waits as long as those settings may take to persist or dead-letter a write.
The machine's own services are never touched: every server here is started by the harness, on its
own ports and directories, and stopped at the end. Needs the machine's ``rabbitmq-server``.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from torture.checker import FIGURES, FINAL_WINDOW, MUST_BE_ZERO, Held, Report, Row, check, held_messages
from torture.cluster import CLUSTER_FAULTS, FAULTS, QUEUE, TOPOLOGIES, Cluster, faults_of
from torture.workload import CHAIN_DEADLINE, TIMEOUT, Client, History

DRAIN_MARGIN = 60.0  # seconds beyond the longest retry schedule
QUIET = 3.0  # seconds the broker must stay empty, once every acknowledged write is accounted for
EMPTY = 15.0  # seconds an empty broker is given before the writes still missing are taken as gone


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m torture", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--duration",
        type=float,
        default=90.0,
        help="seconds of workload under faults, at least: the workload goes on until every fault of the schedule "
        "has been injected once (a slow machine may need longer than the duration for one round)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tenants", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=4, help="per tenant")
    parser.add_argument(
        "--topology",
        choices=TOPOLOGIES,
        default="single",
        help="single: one node of each engine; cluster: a Redis Cluster (3 primaries, a replica each), three "
        "RabbitMQ nodes with quorum queues, a PostgreSQL primary with a streaming replica",
    )
    parser.add_argument(
        "--faults",
        default=None,
        help=f"comma-separated, in schedule order (default: every fault of the topology); single: {', '.join(FAULTS)}; "
        f"cluster: {', '.join(CLUSTER_FAULTS)}; 'none' for no faults",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="start the topology and keep it running (with the nemesis, unless --faults none) for another "
        "workload to drive, until Ctrl-C; prints the service's URL and the tenants' keys (also to --json)",
    )
    parser.add_argument("--interval", type=float, default=4.0, help="seconds of calm between two faults")
    parser.add_argument(
        "--ids",
        choices=("uuid7", "uuid4"),
        default="uuid7",
        help="the clients' own message ids: UUIDv7 (as the docs advise) or UUIDv4 (told new only once Redis's ledger is whole)",
    )
    parser.add_argument("--seed", type=int, default=None, help="one seed (same as --seeds N)")
    parser.add_argument("--seeds", default="1", help="comma-separated; each runs on a fresh cluster")
    parser.add_argument("--retry-backoff-max", type=int, default=None, help="MEMORY_RETRY_BACKOFF_MAX (default: the service's)")
    parser.add_argument(
        "--persist-max-retries", type=int, default=None, help="MEMORY_PERSIST_MAX_RETRIES (default: the service's)"
    )
    parser.add_argument("--drain-timeout", type=float, default=None, help="seconds (default: the retry schedule's length + 60)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    options = parser.parse_args(argv)
    known = faults_of(options.topology)
    if options.faults is None:
        options.fault_names = list(known)
    elif options.faults.strip() == "none":
        options.fault_names = []
    else:
        options.fault_names = [name.strip() for name in options.faults.split(",") if name.strip()]
    unknown = [name for name in options.fault_names if name not in known]
    if unknown:
        parser.error(f"unknown faults {', '.join(unknown)} for --topology {options.topology}; choose among {', '.join(known)}")
    try:
        options.seed_list = (
            [options.seed] if options.seed is not None else [int(s) for s in options.seeds.split(",") if s.strip()]
        )
    except ValueError:
        parser.error(f"--seeds takes integers separated by commas, not {options.seeds!r}")
    return options


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def nemesis(
    cluster: Cluster,
    names: list[str],
    interval: float,
    stop: threading.Event,
    rng: random.Random,
    history: History,
    log: list[str],
    round_done: threading.Event | None = None,
) -> None:
    """Break one thing (or two) at a time, in the order given, round and round, with calm in between;
    ``round_done`` is set once every fault has been injected (ended, well or not) once."""
    index = 0
    stop.wait(interval)
    while not stop.is_set() and names:
        name = names[index % len(names)]
        index += 1
        started = time.time()
        history.faults_begun += 1
        try:
            what = faults_of(cluster.topology)[name](cluster, rng)
        except Exception as error:  # a fault that failed half-way: heal and go on
            what = f"failed: {error!r}"
            cluster.heal()
        entry = f"{time.strftime('%H:%M:%S', time.localtime(started))} {name}: {what} ({time.time() - started:.1f} s)"
        log.append(entry)
        say(f"nemesis  {entry}")
        if round_done is not None and index >= len(names):
            round_done.set()
        stop.wait(interval)


def retry_schedule(backoff_max: int, max_retries: int) -> float:
    """The longest a persist task may retry before it is dead-lettered (``conversations.tasks._backoff``)."""
    return float(sum(min(backoff_max, 2**attempt) for attempt in range(max_retries)))


def acknowledged_ids(history: History) -> set[str]:
    return {
        message_id
        for append in history.appends
        if (attempt := append.acknowledgement) is not None and not any(append.poison)
        for message_id, _ in attempt.answered
    }


def drain(cluster: Cluster, history: History, timeout: float) -> str:
    """Wait until every acknowledged message is in PostgreSQL or the dead-letter table and the broker
    holds nothing (ready or unacknowledged) for a while, or the broker has been empty long enough
    that nothing more can come, or ``timeout``. Answers how it ended."""
    from django.db import DatabaseError, connections

    wanted = acknowledged_ids(history)
    began = time.monotonic()
    deadline = began + timeout
    quiet_since = empty_since = None
    reported = began
    missing: set[str] = wanted
    while time.monotonic() < deadline:
        try:
            stored, dead = stored_ids(), {held.id for held in dead_letters()}
        except DatabaseError:  # our connection did not survive a PostgreSQL restart
            connections.close_all()
            time.sleep(0.5)
            continue
        missing = wanted - stored - dead
        counts = cluster.rabbit.queue_counts((QUEUE, cluster.rabbit.held(QUEUE)))
        held = -1 if counts is None else sum(ready + unacknowledged for ready, unacknowledged in counts.values())
        now = time.monotonic()
        empty_since = (empty_since or now) if held == 0 else None
        quiet_since = (quiet_since or now) if held == 0 and not missing else None
        if quiet_since and now - quiet_since >= QUIET:
            return f"drained in {now - began:.0f} s"
        if empty_since and now - empty_since >= EMPTY:
            return f"the broker has been empty {EMPTY:.0f} s with {len(missing)} acknowledged messages not persisted ({now - began:.0f} s)"
        if now - reported >= 10:
            reported = now
            say(
                f"drain    {now - began:.0f} s: {len(missing)} acknowledged messages not persisted yet, the broker holds {held if held >= 0 else '?'}"
            )
        time.sleep(2.0)
    return f"timed out after {timeout:.0f} s with {len(missing)} acknowledged messages not persisted"


def stored_ids() -> set[str]:
    from conversations.models import Message

    # Every tenant of the run (the harness's own database): the unscoped manager on purpose.
    return set(map(str, Message.unscoped.filter(tenant__slug__startswith="torture-").values_list("message_id", flat=True)))


def dead_letters() -> list[Held]:
    from conversations.models import DeadLetter

    # Dead letters of every tenant, and of none (a payload without its tenant): the unscoped manager on purpose.
    return [held for payload in DeadLetter.unscoped.values_list("payload", flat=True) for held in held_messages(payload)]


def leftovers(cluster: Cluster) -> list[Held] | None:
    """What the broker still holds once the workers are stopped (their unacknowledged messages
    return to the queue): the messages of every persist task left."""
    for worker in cluster.workers:
        worker.stop()
    tasks = cluster.rabbit.messages((QUEUE, cluster.rabbit.held(QUEUE)))
    if tasks is None:
        say("broker   could not be read after the drain")
        return None
    found = []
    for body, _ in tasks:
        try:
            found += held_messages(json.loads(body))
        except ValueError:
            found.append(Held("", "", "", None, f"an undecodable message: {body[:80]!r}"))
    if tasks:
        retries = sorted(int(headers.get("retries") or 0) for _, headers in tasks)
        names = sorted({str(headers.get("task", "?")).rsplit(".", 1)[-1] for _, headers in tasks})
        say(
            f"broker   {len(tasks)} tasks ({', '.join(names)}) still queued after the drain, holding {len(found)} "
            f"messages; retried {retries[0]} to {retries[-1]} times so far"
        )
    return found


def collect(
    cluster: Cluster, history: History
) -> tuple[list[Row], dict[tuple[str, str], list[tuple[str, int]]], dict[tuple[str, str], str]]:
    """PostgreSQL's rows of the run, and each conversation's final window read through the API (or
    why it could not be read)."""
    import httpx

    from conversations.models import Message

    rows = [
        Row(tenant, conversation, str(message_id), seq, content, persisted_at.timestamp())
        for tenant, conversation, message_id, seq, content, persisted_at in Message.unscoped.filter(  # every tenant of the run
            tenant__slug__startswith="torture-"
        ).values_list("tenant__slug", "conversation__conversation_id", "message_id", "seq", "content", "persisted_at")
    ]
    keys = {(row.tenant, row.conversation) for row in rows} | {(a.tenant, a.conversation) for a in history.appends}
    windows, unreadable = {}, {}
    with httpx.Client(base_url=cluster.web.url, timeout=30) as http:
        for tenant in cluster.tenants:
            for conversation in sorted(conversation for slug, conversation in keys if slug == tenant.slug):
                key = (tenant.slug, conversation)
                try:
                    response = http.get(
                        f"/api/v1/conversations/{conversation}/messages/",
                        params={"limit": FINAL_WINDOW},
                        headers={"Authorization": f"Api-Key {tenant.key}"},
                    )
                    if response.status_code == 404 and not any(row.conversation == conversation for row in rows):
                        continue  # never written
                    response.raise_for_status()
                    windows[key] = [(m["id"], m["seq"]) for m in response.json()["messages"]]
                except (httpx.HTTPError, ValueError, KeyError) as error:
                    unreadable[key] = repr(error)[:200]
    return rows, windows, unreadable


def print_report(report: Report, seconds: float, seed: int) -> None:
    print()
    print(f"seed {seed}\n\n| figure | count |\n|---|---:|")
    for name in FIGURES:
        print(f"| {name} | {getattr(report, name)} |")
    for name in MUST_BE_ZERO:
        value = getattr(report, name)
        print(f"| **{name}** (must be 0) | {value}{'  ✗' if value else ''} |")
    print(
        f"| acknowledgement to row, median / p99 / max (s) | {report.lag_median_seconds} / {report.lag_p99_seconds} / "
        f"{report.lag_max_seconds} |"
    )
    print("\nappends: " + ", ".join(f"{name}: {count}" for name, count in sorted(report.appends_by_kind.items())))
    print("answers: " + ", ".join(f"{name}: {count}" for name, count in report.answers.items()))
    for poison, answers in sorted(report.poison_answers.items()):
        print(f"  poison {poison}: " + ", ".join(f"{name}: {count}" for name, count in sorted(answers.items())))
    print(f"{len(report.faults)} faults in {seconds:.0f} s; verdict: {'PASS' if report.ok else 'FAIL'}")
    for kind, examples in report.examples.items():
        senders = ", ".join(f"{name} {count}" for name, count in sorted(report.by_client_kind.get(kind, {}).items()))
        print(f"  {kind} ({getattr(report, kind)}{'; sent by ' + senders if senders else ''}): " + "; ".join(examples))


def run(options: argparse.Namespace, seed: int) -> Report:
    """One run on a fresh cluster."""
    rng = random.Random(seed)
    overrides = {}
    if options.retry_backoff_max is not None:
        overrides["MEMORY_RETRY_BACKOFF_MAX"] = str(options.retry_backoff_max)
    if options.persist_max_retries is not None:
        overrides["MEMORY_PERSIST_MAX_RETRIES"] = str(options.persist_max_retries)
    cluster = Cluster(tenant_count=options.tenants, settings=overrides, topology=options.topology)
    say(f"seed {seed}: starting {cluster.describe()}, gunicorn and two Celery workers …")
    try:
        cluster.start()
        from django.conf import settings

        backoff_max, max_retries = settings.MEMORY_RETRY_BACKOFF_MAX, settings.MEMORY_PERSIST_MAX_RETRIES
        drain_timeout = options.drain_timeout or retry_schedule(backoff_max, max_retries) + DRAIN_MARGIN
        say(
            f"up: {cluster.web.url}, tenants {', '.join(t.slug for t in cluster.tenants)}; MEMORY_RETRY_BACKOFF_MAX={backoff_max}, "
            f"MEMORY_PERSIST_MAX_RETRIES={max_retries}, drain timeout {drain_timeout:.0f} s"
        )
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
                seed=seed * 1000 + number,
                ids=options.ids,
            )
            for number in range(options.clients)
        ]
        faults: list[str] = []
        one_round = threading.Event()
        if not options.fault_names:
            one_round.set()
        chaos = threading.Thread(
            target=nemesis,
            args=(cluster, options.fault_names, options.interval, stop_nemesis, rng, history, faults, one_round),
            daemon=True,
        )
        began = time.time()
        for client in clients:
            client.start()
        chaos.start()
        while (left := options.duration - (time.time() - began)) > 0:
            time.sleep(min(10.0, left))
            say(f"workload {time.time() - began:.0f} s: {progress(history)}")
        if not one_round.is_set():  # the duration is a floor: every fault scheduled is injected once
            say(f"workload goes on until the nemesis has injected each of the {len(options.fault_names)} faults once …")
            while not one_round.wait(10.0) and chaos.is_alive():
                say(f"workload {time.time() - began:.0f} s: {progress(history)}")
        stop_nemesis.set()
        chaos.join(timeout=180)
        stop_clients.set()
        for client in clients:
            client.join(timeout=CHAIN_DEADLINE + TIMEOUT + 5)
        seconds = time.time() - began
        say(f"workload done: {progress(history)}; healing and draining the queue …")
        cluster.heal()
        say(f"drain    {drain(cluster, history, drain_timeout)}")
        left = leftovers(cluster)
        if not cluster.web.running:  # stopped from outside the harness: the final reads need it
            say("web      found stopped after the drain; started again for the final reads")
            cluster.web.start()
        rows, windows, unreadable = collect(cluster, history)
        report = check(
            history=history,
            rows=rows,
            final_windows=windows,
            unreadable_windows=unreadable,
            dead_letters=dead_letters(),
            leftovers=left,
            forgotten_at=cluster.redis_forgotten,
            unreachable=cluster.redis_unreachable,
        )
        report.faults = faults
        print_report(report, seconds, seed)
        return report
    finally:
        say("stopping the servers …")
        cluster.stop()


def serve(options: argparse.Namespace, seed: int) -> int:
    """The topology, kept running for a workload of someone else's, with the nemesis breaking nodes on
    its schedule, until Ctrl-C or SIGTERM; then everything is stopped and removed."""
    rng = random.Random(seed)
    cluster = Cluster(tenant_count=options.tenants, topology=options.topology)
    say(f"starting {cluster.describe()}, gunicorn and two Celery workers …")
    stop_nemesis = threading.Event()
    try:
        cluster.start()
        described = {
            "url": cluster.web.url,
            "tenants": [{"slug": tenant.slug, "key": tenant.key} for tenant in cluster.tenants],
            "topology": options.topology,
            "faults": options.fault_names,
            "environment": {name: value for name, value in cluster.env.items() if name in SERVICE_SETTINGS},
        }
        if options.json:
            options.json.write_text(json.dumps(described, indent=2))
        print(json.dumps(described, indent=2), flush=True)
        faults: list[str] = []
        chaos = threading.Thread(
            target=nemesis,
            args=(cluster, options.fault_names, options.interval, stop_nemesis, rng, History(), faults),
            daemon=True,
        )
        chaos.start()
        say(f"serving {cluster.web.url}; {len(options.fault_names)} faults on the schedule; Ctrl-C stops")
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        stop_nemesis.set()
        say("stopping the servers …")
        cluster.stop()


# What serve() prints of the processes' environment: enough to start another process of the service on it.
SERVICE_SETTINGS = (
    "DJANGO_SETTINGS_MODULE",
    "DATABASE_URL",
    "DATABASE_REPLICA_URL",
    "REDIS_URL",
    "MEMORY_REDIS_CLUSTER",
    "CELERY_BROKER_URL",
    "MEMORY_QUEUE",
    "MEMORY_DERIVED_QUEUE",
    "MEMORY_QUEUE_TYPE",
)


def progress(history: History) -> str:
    with history.lock:
        appends, reads = list(history.appends), len(history.reads)
    outcomes: dict[str, int] = {}
    for append in appends:
        outcomes[append.outcome] = outcomes.get(append.outcome, 0) + 1
    attempts = sum(len(append.attempts) for append in appends)
    return (
        f"{len(appends)} appends ({', '.join(f'{count} {name}' for name, count in sorted(outcomes.items()))}) "
        f"in {attempts} attempts, {reads} reads, {history.faults_begun} faults"
    )


def run_seeds(options: argparse.Namespace, argv: list[str]) -> int:
    """Each seed in a process of its own (Django's settings name one cluster's servers per process)."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="torture-") as directory:
        for seed in options.seed_list:
            path = Path(directory) / f"seed-{seed}.json"
            child = subprocess.Popen(  # noqa: S603 - this very program, with the caller's own arguments
                [sys.executable, "-m", "torture", *without_seeds(argv), "--seed", str(seed), "--json", str(path)]
            )
            try:
                child.wait()
            finally:
                if child.poll() is None:
                    child.terminate()  # it stops its servers on SIGTERM
                    child.wait(timeout=120)
            if not path.exists():
                say(f"seed {seed}: no report (exit {child.returncode})")
                results.append({"seed": seed, "ok": False, "error": f"exit {child.returncode}"})
                continue
            results.extend(json.loads(path.read_text())["runs"])
    print("\n| seed | verdict | " + " | ".join(MUST_BE_ZERO) + " |")
    print("|---:|---|" + "---:|" * len(MUST_BE_ZERO))
    for result in results:
        counts = " | ".join(str(result.get(name, "?")) for name in MUST_BE_ZERO)
        print(f"| {result['seed']} | {'PASS' if result.get('ok') else 'FAIL'} | {counts} |")
    ok = all(result.get("ok") for result in results)
    if options.json:
        options.json.write_text(json.dumps({"ok": ok, "runs": results}, indent=2))
    return 0 if ok else 1


def without_seeds(argv: list[str]) -> list[str]:
    kept, skip = [], False
    for argument in argv:
        if skip:
            skip = False
        elif argument in ("--seeds", "--seed", "--json"):
            skip = True
        elif not argument.startswith(("--seeds=", "--seed=", "--json=")):
            kept.append(argument)
    return kept


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    options = arguments(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out, as on Ctrl-C
    if options.serve:
        return serve(options, options.seed_list[0])
    if len(options.seed_list) > 1:
        return run_seeds(options, argv)
    seed = options.seed_list[0]
    report = run(options, seed)
    if options.json:
        options.json.write_text(json.dumps({"ok": report.ok, "runs": [{"seed": seed, **report.as_dict()}]}, indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
