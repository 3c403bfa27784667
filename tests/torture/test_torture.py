"""The torture harness, CI-sized: every kind of client over HTTP (in-flight retries, resends of
acknowledged ids, server-assigned ids, poison, reads) against gunicorn and two Celery workers with
the service's own retry settings, while the faults that fit in half a minute are injected once, on
servers the harness starts itself; nothing acknowledged is lost, duplicated, reordered, given a
second seq or shown to another tenant, nothing refused or poisonous is stored."""

import json
import os
import subprocess
import sys

import pytest

from torture.checker import MUST_BE_ZERO
from torture.processes import ROOT, PrivateRabbit


def torture(tmp_path, arguments: list[str], *, timeout: float) -> tuple[subprocess.CompletedProcess, dict]:
    """``python -m torture`` with ``arguments``, run here as a user would; its report of the one seed."""
    report_path = tmp_path / "torture.json"
    run = subprocess.run(
        [sys.executable, "-m", "torture", *arguments, "--json", str(report_path)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert report_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    return run, json.loads(report_path.read_text())["runs"][0]


# The instant faults, then the new ones that fit in the run; ``python -m torture`` runs them all.
FAULTS = (
    "kill-worker-process",
    "kill-web-worker",
    "publish-refused-during-postgres-outage",
    "redis-restart-empty-during-postgres-outage",
    "rabbitmq-pause",
)


@pytest.mark.timeout(600)
@pytest.mark.skipif(not PrivateRabbit.available(), reason="needs the machine's rabbitmq-server to start a private node")
def test_faults_lose_duplicate_reorder_reseq_and_leak_nothing(tmp_path):
    run, report = torture(
        tmp_path,
        ["--duration", "30", "--clients", "4", "--tenants", "2", "--conversations", "2"]
        + ["--interval", "1.5", "--faults", ",".join(FAULTS), "--drain-timeout", "120"],
        timeout=540,
    )
    assert report["acknowledged"] > 50  # most of the half minute is spent under faults
    assert set(report["appends_by_kind"]) == {"client-id", "in-flight", "server-id", "resend", "poison"}
    assert {entry.split(" ")[1].rstrip(":") for entry in report["faults"]} == set(FAULTS)
    assert {name: report[name] for name in MUST_BE_ZERO if report[name]} == {}, run.stdout[-6000:]
    assert run.returncode == 0


# A node of each engine killed, and two engines at once: the clustered topology's own schedule.
# A RabbitMQ node takes 15 to 85 s to be back in every quorum queue: the run is long enough for all four.
CLUSTER_FAULTS = (
    "redis-primary-kill",
    "postgres-replica-kill",
    "rabbitmq-node-kill",
    "redis-primary-kill-and-rabbitmq-node-kill",
)


@pytest.mark.timeout(900)
@pytest.mark.skipif(not PrivateRabbit.available(), reason="needs the machine's rabbitmq-server to start private nodes")
def test_the_clustered_topology_loses_nothing_when_a_node_of_each_engine_dies(tmp_path):
    """``python -m torture --topology cluster``: a Redis Cluster of three primaries with a replica each,
    three RabbitMQ nodes with quorum queues, a PostgreSQL primary with a streaming replica, all
    started by the harness on private ports; each fault kills a node under the workload."""
    run, report = torture(
        tmp_path,
        ["--topology", "cluster", "--duration", "90", "--clients", "4", "--tenants", "2", "--conversations", "2"]
        + ["--interval", "1", "--faults", ",".join(CLUSTER_FAULTS)],
        timeout=840,
    )
    assert report["acknowledged"] > 50
    faults = {entry.split(" ")[1].rstrip(":") for entry in report["faults"]}
    assert faults == set(CLUSTER_FAULTS), report["faults"]
    assert not [entry for entry in report["faults"] if "failed" in entry], report["faults"]
    assert {name: report[name] for name in MUST_BE_ZERO if report[name]} == {}, run.stdout[-6000:]
    assert run.returncode == 0
