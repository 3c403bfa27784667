"""The TypeScript client (``client-ts/``, the npm package ``memory-client``) against the service.

Its types are generated from the service's OpenAPI schema and committed (``client-ts/src/schema.ts``):
the first test regenerates them from the schema the service makes now and fails when they differ.
Then the package is type-checked and built (``tsc``, strict), and its Node test suite runs against a
live gunicorn and Celery worker, with API keys of two tenants (and a second gunicorn of the same
service taking fewer items per request).

Node and npm must be installed; ``make test`` installs the package's dependencies
(``client-ts/node_modules``) from its lock.
"""

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiYamlRenderer

from tenants import services as tenant_services
from tests.client.conftest import SMALL_BATCH, SMALL_PAGE, LiveService
from tests.faults import ARTIFACTS, WebServer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "client-ts"
SCHEMA = PACKAGE / "src" / "schema.ts"
REGENERATE = (
    ".venv/bin/python manage.py spectacular --file /tmp/schema.yaml && npm run generate --prefix client-ts -- /tmp/schema.yaml"
)
# Each npm command takes seconds (the Node suite, with its round trips, about twenty); pytest-timeout stops a test at 300 s.
NPM_TIMEOUT = 240


@pytest.fixture(scope="module")
def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm is not installed: the TypeScript client (client-ts/) needs Node 20 or newer and npm.")
    if not (PACKAGE / "node_modules").is_dir():
        pytest.fail(
            "client-ts/node_modules is missing: run `make test` (which installs it) or "
            "`npm ci --prefix client-ts --no-audit --no-fund`."
        )
    return found


def run_npm(npm: str, *arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 (a fixed command line)
        [npm, "run", *arguments],
        cwd=PACKAGE,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT,
        check=False,
    )


def test_the_committed_types_are_those_of_the_service_schema(db: Any, npm: str, tmp_path: Path) -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    schema_file = tmp_path / "schema.yaml"
    schema_file.write_bytes(OpenApiYamlRenderer().render(schema, renderer_context={}))
    generated = tmp_path / "schema.ts"

    result = run_npm(npm, "generate", "--", str(schema_file), str(generated))

    assert result.returncode == 0, f"npm run generate failed:\n{result.stdout}\n{result.stderr}"
    assert generated.read_text() == SCHEMA.read_text(), (
        f"client-ts/src/schema.ts differs from the types of the service's current OpenAPI schema: run `{REGENERATE}`, "
        "then fix what no longer type-checks (npm run build --prefix client-ts)."
    )


def test_the_package_type_checks_and_builds(npm: str) -> None:
    result = run_npm(npm, "build")

    assert result.returncode == 0, f"npm run build (tsc, strict) failed:\n{result.stdout}\n{result.stderr}"
    for entry in ("index", "langchain", "langgraph"):
        assert (PACKAGE / "dist" / f"{entry}.js").is_file()
        assert (PACKAGE / "dist" / f"{entry}.d.ts").is_file()


def test_the_node_suite_passes_against_the_live_service(
    npm: str, service: LiveService, small_batch_web: WebServer, small_page_web: WebServer, other_tenant: Any
) -> None:
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="typescript-client-tests")
    environment = {
        "MEMORY_URL": service.url,
        "MEMORY_API_KEY": service.api_key,
        "MEMORY_OTHER_API_KEY": other_key,
        # The same service, taking at most SMALL_BATCH items per request (MEMORY_MAX_BATCH).
        "MEMORY_SMALL_BATCH_URL": small_batch_web.url,
        "MEMORY_SMALL_BATCH": str(SMALL_BATCH),
        # And one answering at most SMALL_PAGE items per page (MEMORY_MAX_PAGE_SIZE).
        "MEMORY_SMALL_PAGE_URL": small_page_web.url,
        "MEMORY_SMALL_PAGE": str(SMALL_PAGE),
    }

    result = run_npm(npm, "test", env=environment)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "client-ts-node-suite.tap").write_text(result.stdout + result.stderr)  # every test's name and time

    assert result.returncode == 0, f"The Node test suite failed:\n{result.stdout[-20000:]}\n{result.stderr[-5000:]}"
    assert "# fail 0" in result.stdout, result.stdout[-5000:]
