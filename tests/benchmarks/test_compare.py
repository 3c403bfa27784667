"""``make bench`` keeps working: a small run of every part (in process, HTTP under gunicorn, cold
reads) in its own benchmark database, with every system and target reported."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from memoryproject.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = {"service", "LangChain Redis", "LangChain Postgres", "redis floor", "postgres floor", "durable floor", "service HTTP"}


@pytest.mark.timeout(900)
def test_a_small_benchmark_run_reports_every_system_and_target(tmp_path):
    database = settings.DATABASES["default"]
    env = dict(
        os.environ,
        DATABASE_URL=f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/membenchtest",
        REDIS_URL=settings.CACHES["default"]["LOCATION"],
        MEMORY_QUEUE=f"{settings.MEMORY_QUEUE}-bench",
        MEMORY_DERIVED_QUEUE=f"{settings.MEMORY_QUEUE}-bench-derived",
    )
    output = tmp_path / "bench.json"
    arguments = ["--conversations", "2", "--long", "300", "--operations", "40", "--clients", "4", "--cold-messages", "2000"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.compare", *arguments, "--json", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=880,
    )
    with celery_app.connection_for_write() as broker:
        for queue in (env["MEMORY_QUEUE"], env["MEMORY_DERIVED_QUEUE"], f"{env['MEMORY_QUEUE']}-durable-floor"):
            broker.default_channel.queue_delete(queue)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(output.read_text())
    rows = report["figures"]
    assert {row["system"] for row in rows} == SYSTEMS
    assert {row["clients"] for row in rows if row["operation"].startswith("append")} == {1, 4}
    assert {row["clients"] for row in rows if row["system"] == "durable floor"} == {1, 4}
    assert all(row["floor"] == "durable floor" for row in rows if row["system"] == "service" and row["operation"] == "append")
    assert any(row["operation"] == "cold window read (cache miss)" for row in rows)
    assert all(row["p50_ms"] > 0 and row["per_second"] > 0 for row in rows)
    assert 0 < report["service"]["cache_hit_rate"] <= 1
    assert report["service"]["persist_lag_p99_ms"] > 0
    assert len(report["targets"]) >= 8
    assert "| target | measured | met |" in run.stdout
