"""``python -m benchmarks.embedded_memory`` keeps working: the embedded run started on a scratch
directory, the README's quick start run against it, every process measured, everything stopped."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_the_embedded_run_is_measured_process_by_process_and_stopped(tmp_path):
    output = tmp_path / "memory.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.embedded_memory", "--settle", "0", "--json", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    figures = json.loads(output.read_text())
    names = Counter(process["name"] for process in figures["processes"])
    assert figures["processes"][0]["name"] == "launcher"
    assert names["gunicorn master"] == 1
    assert names["gunicorn worker"] == 1
    assert names["celery worker (write path, derived memory, beat thread)"] == 1
    assert names["postgres postmaster"] == 1
    assert names["postgres backend"] >= 1
    assert names["redis-server"] == 1
    assert figures["total_rss_mb"] == pytest.approx(sum(process["rss_mb"] for process in figures["processes"]), abs=0.5)
    assert figures["total_pss_mb"] <= figures["total_rss_mb"]
    assert "target: under 900 MB of RSS in total" in run.stdout
    scratch = run.stdout.split(" in ", 1)[1].split(" ...", 1)[0]  # "starting ... on port N in <scratch> ..."
    assert not Path(scratch).exists()
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if scratch in " ".join(p.info["cmdline"] or [])]
    assert left == []
