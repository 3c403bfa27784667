"""Vectors and search on the embedded default's PostgreSQL (pgserver: PostgreSQL 16 with pgvector),
as well as on the machine's PostgreSQL 15 without pgvector that the rest of the suite uses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryproject import embedded

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_vectors_and_all_search_modes_work_on_the_embedded_postgresql(tmp_path):
    var_dir = tmp_path / "var"
    urls = embedded.service_urls(var_dir)
    try:
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="memoryproject.settings.test", PYTHONPATH=str(ROOT), **urls)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=240)
        run = subprocess.run(
            [sys.executable, "-m", "tests.search.embedded_check"],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=240,
            capture_output=True,
            text=True,
        )
    finally:
        embedded.stop_services(var_dir)
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["server_version"].startswith("16")
    assert report["pgvector_available"]  # available there, and not needed: vectors are plain bytes
    assert "golden retriever" in report["top"]["semantic"] or "Rex" in report["top"]["semantic"]
    assert "88341" in report["top"]["keyword"]
    assert "Denver" in report["top"]["hybrid"]
