"""``python -m benchmarks.capacity`` keeps working: a tiny run starts the whole service, measures every
operation and writes figures in which each operation costs what it must (a write crosses the broker
once, a cold read reaches PostgreSQL, an embedding runs in the derived worker); with
``--embedding-server`` the vectors come from the model server, metered apart from the service."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from torture.processes import PrivateRabbit

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = {
    "window read (cache)",
    "cold window read",
    "context read",
    "search (hybrid)",
    "append, batch of 1",
    "append, batch of 10",
    "embedded message, in batches",
    "embedded message, one per task",
}


def tiny_run(tmp_path: Path, *, database_name: str, extra: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, dict]:
    """A run of 4 operations each on one conversation of 6 messages, its output and its figures."""
    database = settings.DATABASES["default"]
    env = dict(
        os.environ,
        DATABASE_URL=f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database_name}",
    )
    output = tmp_path / "capacity.json"
    arguments = ["--operations", "4", "--conversations", "1", "--messages", "6", "--idle", "0.5", "--web-workers", "1", *extra]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.capacity", *arguments, "--json", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run, json.loads(output.read_text())


@pytest.mark.timeout(240)
@pytest.mark.skipif(not PrivateRabbit.available(), reason="needs the machine's rabbitmq-server to start a private node")
def test_a_tiny_capacity_run_costs_every_operation_where_it_should(tmp_path):
    run, report = tiny_run(tmp_path, database_name="capacitybenchtest")
    rows = {row["operation"]: row for row in report["figures"]}
    assert set(rows) == OPERATIONS
    assert report["errors"] == 0
    assert all(row["cpu_ms_total"] > 0 for row in rows.values())
    for batch in (1, 10):
        append = rows[f"append, batch of {batch}"]
        assert append["broker"]["published"] >= 1  # the persist task, confirmed before the 201
        # The idle deployment's statements over as long are taken away: a tiny run's count may fall below 1.
        assert append["sql_statements"] > 0  # the worker's insert
        assert append["redis_scripts"] >= 1
    assert rows["window read (cache)"]["sql_statements"] == 0
    assert rows["cold window read"]["sql_statements"] > 0
    assert rows["embedded message, one per task"]["broker"]["delivered"] >= 1  # its embedding task
    for embedded in ("embedded message, in batches", "embedded message, one per task"):
        assert rows[embedded]["cpu_ms"]["derived worker"] > rows[embedded]["cpu_ms"]["web"]
    assert "| operation | unit |" in run.stdout
    assert all(row["cpu_ms_outside"] == {} for row in rows.values())  # nothing outside the service


@pytest.mark.timeout(240)
@pytest.mark.skipif(not PrivateRabbit.available(), reason="needs the machine's rabbitmq-server to start a private node")
def test_with_an_embedding_server_the_vectors_cost_the_server_apart_from_the_service(tmp_path):
    run, report = tiny_run(tmp_path, database_name="capacitybenchtestremote", extra=("--embedding-server",))
    rows = {row["operation"]: row for row in report["figures"]}
    assert set(rows) == OPERATIONS
    assert report["errors"] == 0
    assert "embedding server" in report["settings"]["embedding"]
    for embedded in ("embedded message, in batches", "embedded message, one per task"):
        assert rows[embedded]["cpu_ms_outside"]["embedding server"] > 0  # the vectors were computed there
        assert rows[embedded]["broker"]["delivered"] > 0  # and asked for by the derived worker's tasks
    for row in rows.values():
        assert set(row["cpu_ms_outside"]) == {"embedding server"}
        assert "embedding server" not in row["cpu_ms"]  # never in the service's total
    assert "CPU ms embedding server (outside)" in run.stdout
