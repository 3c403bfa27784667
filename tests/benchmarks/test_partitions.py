"""``python -m benchmarks.partitions`` keeps working: 20,000 messages loaded into an unpartitioned and a
partitioned benchmark database, the cold window read timed beside the floor, every figure written."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = ("unpartitioned", "hash16")


@pytest.mark.timeout(600)
def test_a_small_partitions_run_loads_both_layouts_and_reports_the_cold_read_beside_the_floor(tmp_path):
    database = settings.DATABASES["default"]
    server = f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}"
    name = f"membench_{database['NAME']}_partitions"[:50]
    env = dict(
        os.environ,
        DATABASE_URL=f"{server}/{name}",
        REDIS_URL=settings.CACHES["default"]["LOCATION"],
        MEMORY_QUEUE=f"{settings.MEMORY_QUEUE}-bench",
    )
    output = tmp_path / "partitions.json"
    arguments = ["--messages", "20000", "--tenants", "40", "--longest", "400", "--operations", "30"]
    try:
        run = subprocess.run(
            [sys.executable, "-m", "benchmarks.partitions", *arguments, "--layouts", ",".join(LAYOUTS), "--json", str(output)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=580,
        )
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            for layout in LAYOUTS:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}_{layout}" WITH (FORCE)')
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(output.read_text())
    layouts = {layout["layout"]: layout for layout in report["layouts"]}
    assert set(layouts) == set(LAYOUTS)
    assert all(19_000 <= layout["messages"] <= 20_000 for layout in layouts.values())
    # The partitioned store's window index is spread over 16 partitions, each smaller than the whole.
    window = layouts["hash16"]["sizes"][layouts["hash16"]["window_index"]]
    assert window["largest_partition"] < window["total"]
    rows = report["figures"]
    assert {(row["system"], row["notes"]["layout"]) for row in rows} == {
        (system, layout) for system in ("service", "postgres floor") for layout in LAYOUTS
    }
    assert all(row["p50_ms"] > 0 and row["ratio_to_floor"] > 0 for row in rows)
    cold = [row for row in rows if row["operation"] == "cold window read (cache miss)"]
    assert [row["sql_queries"] for row in cold] == [1.0, 1.0]
    assert {row["notes"]["partitions_read"] for row in cold} == {1}
    assert "| layout | messages | service cold read p50 ms" in run.stdout
