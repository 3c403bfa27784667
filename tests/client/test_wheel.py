"""The client as users install it: the wheel built from ``client/``, installed alone (with httpx
from PyPI and pytest) into a clean virtualenv, runs ``client/tests_wheel`` there against the live
service. It fails when the wheel misses a module, imports Django, or a method is broken.
Select it with ``-m wheel``; it needs PyPI (the build backend, httpx, pytest)."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.client.conftest import LiveService
from tests.faults import ROOT

pytestmark = pytest.mark.wheel

CLIENT = Path(ROOT) / "client"
MODULE = CLIENT / "tests_wheel" / "test_installed_client.py"
# The test runner of the clean environment, pinned as in requirements-dev.txt.
PYTEST = "pytest==9.2.0"


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def clean_environment() -> dict[str, str]:
    """This process's environment without what would let the venv see the source tree or Django."""
    hidden = {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONHOME"}
    return {name: value for name, value in os.environ.items() if name not in hidden}


def test_the_wheel_installed_alone_in_a_clean_virtualenv_works_against_the_service(service: LiveService, tmp_path: Path) -> None:
    version = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["version"]
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(CLIENT), "-w", str(wheels)], cwd=tmp_path)
    (wheel,) = wheels.glob("memory_client-*.whl")
    assert wheel.name == f"memory_client-{version}-py3-none-any.whl"

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = str(venv / "bin" / "python")
    env = clean_environment()
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel), PYTEST], cwd=tmp_path, env=env)

    # Run from a directory holding only the test module, so that nothing but the wheel provides memory_client.
    workdir = tmp_path / "run"
    workdir.mkdir()
    shutil.copy(MODULE, workdir / MODULE.name)
    env |= {"MEMORY_SERVICE_URL": service.url, "MEMORY_API_KEY": service.api_key, "MEMORY_CLIENT_VERSION": version}
    output = run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(workdir), MODULE.name],
        cwd=workdir,
        env=env,
        timeout=120,
    )
    assert "4 passed" in output, output
