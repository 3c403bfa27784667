"""The production deployment as docs/deployment.md runs it: the Procfile's own command lines, started
for real with ``memoryproject.settings.production`` against this machine's PostgreSQL, Redis and
RabbitMQ.

A new database is migrated by the ``release`` line; without collected static files ``check --deploy``
fails and gunicorn refuses to boot, both naming ``collectstatic``; the ``web`` line collects them and
serves the admin's login page with its stylesheet behind a TLS proxy, and the probes to any Host over
plain HTTP; the ``worker``, ``derived`` and ``beat`` lines start, and a write sent to the web process is
persisted by the ``worker`` line's process. The browser case (the login page styled) needs Debian's
chromium and chromium-driver, and is skipped without them.
"""

import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from memoryproject.celery import app as celery_app
from tests.conversations.test_admin_browser import driver  # noqa: F401 - the headless Chromium fixture
from tests.faults import ARTIFACTS, ROOT, free_port, wait_until

pytestmark = pytest.mark.worker

HOST = "localhost"  # in DJANGO_ALLOWED_HOSTS
PROXIED = {"Host": HOST, "X-Forwarded-Proto": "https"}  # what the TLS-terminating proxy sends


def procfile() -> dict[str, str]:
    """The Procfile's command lines by process type."""
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(
        (name.strip(), command.strip())
        for name, command in (line.split(":", 1) for line in lines if line.strip() and not line.startswith("#"))
    )


@dataclass
class Deployment:
    env: dict[str, str]
    database_url: str
    static_root: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, command: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """A command line run to its end in the deployment's environment, as the platform runs it."""
        return subprocess.run(  # noqa: S602 - the Procfile's lines are shell command lines
            command, shell=True, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )


class ProcfileProcess:
    """One Procfile line running in its own session, its output in ``test-artifacts/``."""

    def __init__(self, deployment: Deployment, name: str, command: str) -> None:
        self.name = name
        self.log_path = ARTIFACTS / f"production-{name}-{os.getpid()}.log"
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(self.log_path, "w")  # noqa: SIM115 - kept open for the process' lifetime
        self.process = subprocess.Popen(  # noqa: S602
            command,
            shell=True,
            cwd=ROOT,
            env=deployment.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str) -> None:
        def printed() -> bool:
            assert self.process.poll() is None, f"{self.name} exited with {self.process.returncode}:\n{self.output()[-3000:]}"
            return text in self.output()

        wait_until(printed, timeout=90, message=f"{self.name} to print {text!r} (log: {self.log_path})")

    def terminate(self) -> None:
        """SIGTERM to the whole session: gunicorn's graceful stop, Celery's warm shutdown."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
        return self.process.returncode


def get(deployment: Deployment, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A GET that does not follow redirects: (status, headers, body)."""

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    request = urllib.request.Request(deployment.url + path, headers=headers or {})  # noqa: S310 - http to our own server
    try:
        with urllib.request.build_opener(NoRedirects).open(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def deployment(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Deployment]:
    """A new database, an empty STATIC_ROOT, queues of its own, and the environment production is given."""
    with django_db_blocker.unblock():
        db = connection.settings_dict
        name = f"{db['NAME']}_production"
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            cursor.execute(f'CREATE DATABASE "{name}"')
    database_url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"
    queue = f"{settings.MEMORY_QUEUE}-production"
    with tempfile.TemporaryDirectory(prefix="static-") as static_root:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "MEMORY_"))}
        env.update(
            DJANGO_SETTINGS_MODULE="memoryproject.settings.production",
            DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
            DATABASE_URL=database_url,
            REDIS_URL=settings.REDIS_URL,
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            DJANGO_ALLOWED_HOSTS=HOST,
            DJANGO_STATIC_ROOT=static_root,
            MEMORY_QUEUE=queue,
            MEMORY_DERIVED_QUEUE=f"{queue}-derived",
            # Vectors off: the derived worker starts as in production, without loading a model here.
            MEMORY_EMBEDDING_MODEL="",
            PORT=str(free_port()),
            # The virtualenv's python, gunicorn and celery, as its activation would give them.
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        yield Deployment(env=env, database_url=database_url, static_root=Path(static_root), port=int(env["PORT"]))
    with celery_app.connection_for_write() as broker:
        channel = broker.channel()
        for name_ in (queue, f"{queue}-derived"):
            channel.queue_delete(name_)
        channel.close()
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def released(deployment: Deployment) -> Deployment:
    finished = deployment.run(procfile()["release"])
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return deployment


@pytest.fixture(scope="module")
def web(released: Deployment) -> Iterator[Deployment]:
    process = ProcfileProcess(released, "web", procfile()["web"])

    def serving() -> bool:
        assert process.process.poll() is None, f"the web line exited:\n{process.output()[-3000:]}"
        try:
            return get(released, "/healthz")[0] == 200
        except OSError:  # not listening yet
            return False

    try:
        wait_until(serving, timeout=120, message=f"the web line to serve /healthz (log: {process.log_path})")
        yield released
    finally:
        process.stop()


def test_the_release_line_migrates_a_new_database(released):
    with psycopg.connect(released.database_url) as database:
        applied = database.execute("SELECT count(*) FROM django_migrations WHERE app = 'conversations'").fetchone()[0]
    assert applied >= 8


def test_without_collectstatic_check_deploy_fails_and_gunicorn_refuses_to_boot_naming_the_command(released):
    assert not (released.static_root / "staticfiles.json").exists()
    checked = released.run("python manage.py check --deploy")
    booted = released.run(procfile()["web"].split("&&", 1)[1].replace("exec ", "", 1), timeout=120)

    assert checked.returncode != 0
    assert "memoryproject.E001" in checked.stderr
    assert "python manage.py collectstatic --noinput" in checked.stderr
    # gunicorn's master exits 3 (a worker failed to boot), or 1 when a second worker's failure is reaped
    # while it halts for the first (gunicorn 27's Arbiter.stop raises HaltServer again out of halt):
    # either way the process ends, non-zero, for a supervisor to see.
    assert booted.returncode in (1, 3), booted.stdout + booted.stderr
    assert "python manage.py collectstatic --noinput" in booted.stderr
    assert "Worker failed to boot" in booted.stderr


def test_the_web_line_serves_the_admin_login_page_and_its_stylesheet(web):
    status, headers, body = get(web, "/admin/login/", PROXIED)

    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    stylesheet = re.search(rb'href="(/static/admin/css/base\.[0-9a-f]{12}\.css)"', body)
    assert stylesheet, body[:2000]
    status, headers, css = get(web, stylesheet.group(1).decode(), PROXIED)
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert b"--header-bg" in css
    assert "immutable" in headers.get("Cache-Control", "")  # hashed names cached for ever by whitenoise


def test_check_deploy_passes_once_the_static_files_are_collected(web):
    checked = web.run("python manage.py check --deploy --fail-level WARNING")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues" in checked.stdout


def test_plain_http_is_redirected_to_https_but_the_probes_answer_on_any_host(web):
    status, headers, _ = get(web, "/admin/login/", {"Host": HOST})
    assert status == 301
    assert headers["Location"] == f"https://{HOST}/admin/login/"

    for path in ("/healthz", "/readyz"):
        status, headers, body = get(web, path, {"Host": "10.1.2.3:8000"})  # the orchestrator's probe
        assert status == 200, body
        assert headers["Content-Type"] == "application/json"
    assert b'"status": "ready"' in body


def test_the_admin_login_page_is_styled_in_a_browser(web, driver):  # noqa: F811 - the imported fixture
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"X-Forwarded-Proto": "https"}})
    try:
        driver.get(f"http://{HOST}:{web.port}/admin/login/")
        header = driver.find_element("id", "header")
        background = header.value_of_css_property("background-color")
        font = driver.find_element("tag name", "body").value_of_css_property("font-family")
    finally:
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})

    assert background not in ("", "transparent", "rgba(0, 0, 0, 0)")  # base.css's --header-bg applied
    assert "Times" not in font


@pytest.fixture(scope="module")
def workers(web: Deployment) -> Iterator[dict[str, ProcfileProcess]]:
    lines = procfile()
    processes = {name: ProcfileProcess(web, name, lines[name]) for name in ("worker", "derived", "beat")}
    try:
        processes["worker"].wait_for("ready.")
        processes["derived"].wait_for("ready.")
        processes["beat"].wait_for("beat: Starting...")
        yield processes
    finally:
        for process in processes.values():  # all at once: their shutdowns overlap
            process.terminate()
        for process in processes.values():
            process.stop()


def test_the_worker_lines_start_and_the_worker_persists_a_write_sent_to_the_web_line(web, workers):
    created = web.run("python manage.py create_tenant production-check --quiet")
    assert created.returncode == 0, created.stdout + created.stderr
    key = created.stdout.strip().splitlines()[-1]

    request = urllib.request.Request(  # noqa: S310
        f"{web.url}/api/v1/conversations/deploy-1/messages/",
        data=b'{"role": "user", "content": "persisted by the Procfile worker"}',
        headers={**PROXIED, "Authorization": f"Api-Key {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        assert answer.status == 201

    def persisted() -> bool:
        with psycopg.connect(web.database_url) as database:
            row = database.execute(
                "SELECT count(*) FROM conversation_messages WHERE content = 'persisted by the Procfile worker'"
            ).fetchone()
        return row[0] == 1

    wait_until(persisted, timeout=60, message="the worker line to persist the write")
    # Each worker consumes its own queue, named by the environment, under a node name of its own.
    assert re.search(rf"\.> {re.escape(web.env['MEMORY_QUEUE'])} ", workers["worker"].output())
    assert re.search(rf"\.> {re.escape(web.env['MEMORY_DERIVED_QUEUE'])} ", workers["derived"].output())
    assert "write-" in workers["worker"].output()
