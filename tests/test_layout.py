"""The layers of the code hold: no app imports one above it, so no import cycle between apps
(the contracts are ``[tool.importlinter]`` in pyproject.toml; ``make lint`` checks them too)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def test_no_app_imports_a_layer_above_it_nor_the_harness_or_the_benchmarks():
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout
