"""The layers of the code hold: no app imports one above it, so no import cycle between apps; within
conversations and search, each module keeps its place (tasks above services, metrics below them),
and no modules import each other in a circle, not even from inside a function (the contracts are
``[tool.importlinter]`` in pyproject.toml; ``make lint`` checks them too)."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def test_no_app_imports_a_layer_above_it_nor_the_harness_or_the_benchmarks():
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_apps_with_a_write_path_have_their_modules_in_layers_and_in_no_circle():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]

    layered = {
        container for contract in contracts if contract["type"] == "layers" for container in contract.get("containers", ())
    }
    acyclic = {ancestor for contract in contracts if contract["type"] == "acyclic_siblings" for ancestor in contract["ancestors"]}
    assert {"conversations", "search"} <= layered & acyclic


def test_the_layers_hold_without_any_import_let_through():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]

    assert [contract["name"] for contract in contracts if contract.get("ignore_imports")] == []
