"""A PostgreSQL primary and its streaming replica (``DATABASE_REPLICA_URL``), with gunicorn and a
Celery worker of our own: which reads the replica answers, that an acknowledged append is read back
while the replica's replay is paused and Redis has forgotten it, and that the replica SIGKILLed under a
load of reads and appends costs no error answer and is used again once it returns."""

import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kombu import Connection

from tests.faults import ROOT, CeleryWorker, PrivateRedis, WebServer, wait_until
from torture.postgres_replica import PrivatePostgresPair

BROKER_URL = os.environ.get("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")
QUEUE = f"replica-pair-{os.getpid()}"
PROBE = Path(__file__).with_name("replica_probe.py")
# A read of the messages table in the replica's statement log (log_statement=all).
# A simple query logs "statement: ...", a prepared or extended one "execute <name>: ..." (the cold window's).
MESSAGE_READ = re.compile(r'(?:statement|execute [^:\s]*):\s*SELECT(?:(?!LOG:)[\s\S])*?\bFROM "?conversation_messages\b')

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def pair() -> Iterator[PrivatePostgresPair]:
    servers = PrivatePostgresPair(log_statements=True)
    try:
        servers.start()
        yield servers
    finally:
        servers.close()


@pytest.fixture(scope="module")
def redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def env(pair: PrivatePostgresPair, redis: PrivateRedis) -> Iterator[dict[str, str]]:
    environment = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
        REDIS_URL=redis.url,
        CELERY_BROKER_URL=BROKER_URL,
        MEMORY_QUEUE=QUEUE,
        MEMORY_DERIVED_QUEUE=f"{QUEUE}-derived",
        MEMORY_EMBEDDING_MODEL="",
        MEMORY_REPLICA_RETRY_SECONDS="1",
        DJANGO_LOG_LEVEL="INFO",
        PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'client'}",
        **pair.service_env(),
    )
    manage(environment, "migrate", "--verbosity", "0")
    yield environment
    with Connection(BROKER_URL) as broker:
        for queue in (QUEUE, f"{QUEUE}-derived"):
            try:
                broker.default_channel.queue_delete(queue)
            except Exception:  # noqa: S110 - never declared
                broker.close()


@pytest.fixture(scope="module")
def service(env: dict[str, str]) -> Iterator[WebServer]:
    web = WebServer(env=env, name="replica-web", workers=2, threads=8)
    worker = CeleryWorker(env=env, name="replica-persist", concurrency=2)
    try:
        web.start()
        worker.start()
        yield web
    finally:
        worker.stop()
        web.stop()


def manage(env: dict[str, str], *arguments: str) -> str:
    run = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def api(service: WebServer, env: dict[str, str], slug: str) -> httpx.Client:
    key = manage(env, "create_tenant", slug, "--quiet").strip().splitlines()[-1]
    return httpx.Client(base_url=f"{service.url}/api/v1", headers={"Authorization": f"Api-Key {key}"}, timeout=30)


def append(client: httpx.Client, conversation: str, content: str) -> dict[str, Any]:
    answer = client.post(f"/conversations/{conversation}/messages/", json={"role": "user", "content": content, "user_id": "u-1"})
    assert answer.status_code == 201, answer.text
    return answer.json()


def window(client: httpx.Client, conversation: str, **params: Any) -> list[str]:
    answer = client.get(f"/conversations/{conversation}/messages/", params={"limit": 100, **params})
    assert answer.status_code == 200, answer.text
    return [message["content"] for message in answer.json()["messages"]]


def rows(pair: PrivatePostgresPair, *, replica: bool = False) -> int:
    (count,) = pair.query("SELECT count(*) FROM conversation_messages", replica=replica)
    return count


def message_reads(pair: PrivatePostgresPair, since: int = 0) -> int:
    """Reads of the messages table the replica ran since byte ``since`` of its log."""
    with open(pair.replica_log, errors="replace") as log:
        log.seek(since)
        return len(MESSAGE_READ.findall(log.read()))


def log_size(pair: PrivatePostgresPair) -> int:
    return pair.replica_log.stat().st_size


def probe(env: dict[str, str], *arguments: str) -> dict[str, Any]:
    run = subprocess.run([sys.executable, str(PROBE), *arguments], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in run.stdout.splitlines() if line.startswith("PROBE ")]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert lines, run.stdout[-3000:]
    return json.loads(lines[-1][len("PROBE ") :]) | {"log": run.stdout + run.stderr}


def test_only_marked_reads_go_to_the_replica_and_writes_never(pair, env, service):
    client = api(service, env, "replica-routing")
    for turn in range(3):
        append(client, "routed", f"replica turn {turn}")
    wait_until(lambda: rows(pair) >= 3, message="the appends to be persisted")
    pair.wait_caught_up()

    report = probe(env, "replica-routing", "routed")

    for case in ("search", "window", "admin_list"):
        assert report[case]["error"] is None, report[case]
        assert report[case]["replica"], f"{case} read nothing on the replica: {report[case]}"
        # Only the admin's session and user, read before its view, come from the primary.
        on_primary = [sql for sql in report[case]["default"] if sql not in ("SELECT django_session", "SELECT auth_user")]
        assert not on_primary, f"{case} read tables on the primary: {report[case]}"
    for case in ("plain", "transaction", "admin_form"):  # unmarked, inside a transaction, a change form
        assert report[case]["error"] is None, report[case]
        assert report[case]["default"], report[case]
        assert not report[case]["replica"], report[case]
    # A write inside a stale read goes to the primary; the read beside it to the replica.
    assert report["write"]["error"] is None, report["write"]
    assert [sql for sql in report["write"]["default"] if sql.startswith("UPDATE")], report["write"]
    assert not [sql for sql in report["write"]["replica"] if not sql.startswith("SELECT")], report["write"]


def test_an_acknowledged_append_is_read_back_with_replay_paused_and_redis_emptied(pair, env, service, redis):
    client = api(service, env, "replica-ryw")
    append(client, "ryw", "before the pause")
    wait_until(lambda: rows(pair) >= 1 and pair.caught_up(), message="the first append on both servers")
    before = rows(pair)
    pair.pause_replay()
    try:
        append(client, "ryw", "while replay is paused")
        wait_until(lambda: rows(pair) == before + 1, message="the second append to be persisted on the primary")
        assert rows(pair, replica=True) == before  # the replica lags: it has not replayed the second
        redis.restart_empty()  # Redis forgets the conversation: the next read is a cold read of PostgreSQL
        offset = log_size(pair)

        assert window(client, "ryw") == ["before the pause", "while replay is paused"]
        assert window(client, "ryw", include_archived="true") == ["before the pause", "while replay is paused"]
        assert message_reads(pair, offset) == 0  # the lagging replica was not asked for the rows
    finally:
        pair.resume_replay()
    pair.wait_caught_up()
    redis.restart_empty()
    offset = log_size(pair)
    assert window(client, "ryw") == ["before the pause", "while replay is paused"]
    assert message_reads(pair, offset) >= 1  # caught up again: the replica answers the cold read


def test_replica_killed_under_load_costs_no_error_and_is_used_again(pair, env, service):
    client = api(service, env, "replica-kill")
    append(client, "load-0", "replica load 0")
    wait_until(pair.caught_up, message="the replica to catch up")
    answers: dict[str, list[int]] = {"append": [], "window": [], "search": [], "readyz": []}
    readiness: list[str] = []
    appended: list[str] = []
    stop = threading.Event()

    def appender(name: str) -> None:
        with httpx.Client(base_url=client.base_url, headers=client.headers, timeout=30) as http:
            while not stop.is_set():
                content = f"replica load {uuid.uuid4().hex[:8]}"
                answer = http.post(
                    f"/conversations/{name}/messages/", json={"role": "user", "content": content, "user_id": "u-1"}
                )
                answers["append"].append(answer.status_code)
                if answer.status_code == 201:
                    appended.append(content)

    def reader() -> None:
        with httpx.Client(base_url=client.base_url, headers=client.headers, timeout=30) as http:
            while not stop.is_set():
                cold = http.get("/conversations/load-0/messages/", params={"limit": 20, "include_archived": "true"})
                answers["window"].append(cold.status_code)
                found = http.post("/users/u-1/search/", json={"q": "replica load", "mode": "keyword", "top_k": 5})
                answers["search"].append(found.status_code)

    def prober() -> None:
        while not stop.is_set():
            answer = httpx.get(f"{service.url}/readyz", timeout=10)
            answers["readyz"].append(answer.status_code)
            readiness.append(answer.json()["status"])
            time.sleep(0.2)

    threads = [threading.Thread(target=appender, args=(f"load-{index}",)) for index in range(2)]
    threads += [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=prober)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.5)
        line = pair.kill_replica(random.Random(7))
        after_restart = log_size(pair)
        time.sleep(3.0)  # past MEMORY_REPLICA_RETRY_SECONDS: the processes probe the replica again
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

    errors = {kind: sorted({code for code in codes if code >= 300}) for kind, codes in answers.items()}
    assert errors == {"append": [], "window": [], "search": [], "readyz": []}, (line, errors)
    assert min(len(codes) for codes in answers.values()) >= 5, {kind: len(codes) for kind, codes in answers.items()}
    assert "degraded" in readiness  # while the replica was down, and never unavailable
    wait_until(lambda: rows(pair) >= len(appended) + 1, message="every acknowledged append to be persisted")
    assert message_reads(pair, after_restart) >= 1, "the replica was not used again after it came back"
    log = service.log_path.read_text(errors="replace")
    assert "database_replica_down" in log
    assert "database_replica_up" in log
