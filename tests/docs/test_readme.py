"""The README's quick start, run as written against a live service.

The quick start's ```bash blocks are taken from the README in order and run by one bash (``set -euo
pipefail``, so the first failing command ends the run): the variables one block sets are the next
one's. The service is a real gunicorn and a real Celery worker on the test database, Redis and queue;
the only changes to the text are the address (the server's free port instead of 8000) and the
folder the blocks run in, which holds ``var/demo-api-key.txt`` with a key of the test's tenant, as
``make run`` writes it. Every ``curl`` of the quick start uses ``-f``, so an answer of 400 or more
fails its block: a block that erased the conversation before a later one reads it fails here.
"""

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tenants import services as tenant_services
from tests.faults import ROOT, CeleryWorker, WebServer

README = ROOT / "README.md"
QUICK_START = "## Quick start"
DOCUMENTED_ADDRESS = "http://127.0.0.1:8000"
BLOCK_MARK = "readme-block"

pytestmark = pytest.mark.worker


def quick_start_blocks(text: str) -> list[str]:
    """The ```bash blocks of the README's quick start section, in order."""
    start = text.index(QUICK_START)
    end = text.find("\n## ", start + len(QUICK_START))
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"^```bash\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def script_of(blocks: list[str], *, address: str) -> str:
    """One bash script running the blocks in order, each announced on stdout."""
    parts = ["set -euo pipefail"]
    for number, block in enumerate(blocks, start=1):
        parts.append(f"printf '\\n{BLOCK_MARK} {number}\\n'")  # on a line of its own: curl ends without one
        parts.append(block.replace(DOCUMENTED_ADDRESS, address))
    return "\n".join(parts) + "\n"


def outputs_by_block(stdout: str) -> dict[int, str]:
    found: dict[int, str] = {}
    current = 0
    for line in stdout.splitlines():
        if line.startswith(BLOCK_MARK + " "):
            current = int(line.split()[1])
            found[current] = ""
        elif current and line:
            found[current] += line + "\n"
    return found


def test_the_quick_start_has_examples_to_run() -> None:
    blocks = quick_start_blocks(README.read_text())
    assert len(blocks) >= 6
    assert all("curl " not in block or "curl -fsS" in block for block in blocks), "every curl fails on an error answer"


@pytest.fixture
def live_web(worker_env: dict[str, str], transactional_db: Any) -> Any:
    web = WebServer(env=worker_env, name="readme", workers=1, threads=4)
    web.start()
    try:
        yield web
    finally:
        web.stop()


def test_every_quick_start_example_works_top_to_bottom(
    live_web: WebServer, worker: CeleryWorker, tenant: Any, tmp_path: Path
) -> None:
    _, key = tenant_services.api_key_create(tenant=tenant, name="readme")
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "demo-api-key.txt").write_text(key + "\n")
    blocks = quick_start_blocks(README.read_text())

    run = subprocess.run(
        ["bash", "-c", script_of(blocks, address=live_web.url)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )

    outputs = outputs_by_block(run.stdout)
    last = max(outputs, default=0)
    assert run.returncode == 0, (
        f"quick start block {last} of {len(blocks)} failed (exit {run.returncode}):\n{blocks[last - 1] if last else ''}\n"
        f"--- its output ---\n{outputs.get(last, '')}\n--- stderr ---\n{run.stderr}"
    )
    assert last == len(blocks)
    resend = next(number for number, block in enumerate(blocks, start=1) if "prints 201, then 200" in block)
    assert outputs[resend].split() == ["201", "200"], "a batch with ids is stored once, and its resend is a 200"


def test_a_broken_example_fails_the_run(live_web: WebServer, worker: CeleryWorker, tenant: Any, tmp_path: Path) -> None:
    """The check above catches what it must: the conversation erased before the context is asked for."""
    _, key = tenant_services.api_key_create(tenant=tenant, name="readme")
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "demo-api-key.txt").write_text(key + "\n")
    blocks = quick_start_blocks(README.read_text())
    erase = next(block for block in blocks if "-X DELETE" in block)
    context = next(number for number, block in enumerate(blocks) if "/context/" in block)
    broken = [blocks[0], blocks[1], erase, blocks[context]]

    run = subprocess.run(
        ["bash", "-c", script_of(broken, address=live_web.url)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )

    assert run.returncode != 0
