"""The torture harness, CI-sized: clients over HTTP against gunicorn and two Celery workers while
every kind of fault is injected once, on servers the harness starts itself; nothing acknowledged is
lost, duplicated, reordered or shown to another tenant."""

import json
import os
import subprocess
import sys

import pytest

from torture.cluster import FAULTS
from torture.processes import ROOT, PrivateRabbit


@pytest.mark.timeout(600)
@pytest.mark.skipif(not PrivateRabbit.available(), reason="needs the machine's rabbitmq-server to start a private node")
def test_every_fault_once_loses_duplicates_reorders_and_leaks_nothing(tmp_path):
    report_path = tmp_path / "torture.json"
    run = subprocess.run(
        [sys.executable, "-m", "torture", "--duration", "30", "--clients", "4", "--tenants", "2", "--conversations", "2"]
        + ["--interval", "1.5", "--json", str(report_path)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert report_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert run.returncode == 0, run.stdout[-3000:]
    assert report["ok"]
    assert report["acknowledged"] > 100
    assert report["stored"] >= report["acknowledged"]
    for name in ("lost", "duplicated", "reordered", "seq_mismatch_cache", "vanished", "stale_reads", "phantoms", "cross_tenant"):
        assert report[name] == 0, report["examples"]
    assert {entry.split(" ")[1].rstrip(":") for entry in report["faults"]} == set(FAULTS)
