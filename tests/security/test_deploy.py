"""The deployment as production configures it (``memoryproject.settings.production``), read in a fresh
process with only the environment production is given: Django's deployment checks pass at WARNING,
nothing is serialised with pickle (Celery's messages and results, the cache, sessions), and the API is
throttled per tenant at the deployment's own limit.

tests/test_settings.py reads the same promises under the test settings, where the suite runs.
"""

import json
import os
import pickle
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
# Where this module's production process collects the static files (``check --deploy`` requires them).
STATIC_ROOT = Path(tempfile.gettempdir()) / f"memory-deploy-static-{os.getpid()}"


def production_environment() -> dict[str, str]:
    """The machine's environment without any DJANGO_ or MEMORY_ setting, plus what production requires."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("DJANGO_", "MEMORY_"))}
    environment.update(
        DJANGO_SETTINGS_MODULE="memoryproject.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),  # 67 characters, as random as they come
        DATABASE_URL="postgres://memory@127.0.0.1:5432/memory",
        REDIS_URL="redis://127.0.0.1:6379/0",
        CELERY_BROKER_URL="amqp://guest:guest@127.0.0.1:5672//",
        DJANGO_STATIC_ROOT=str(STATIC_ROOT),
    )
    return environment


@pytest.fixture(scope="module", autouse=True)
def collected_static_files_removed_at_the_end() -> Iterator[None]:
    yield
    shutil.rmtree(STATIC_ROOT, ignore_errors=True)


def run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, env=production_environment(), capture_output=True, text=True, timeout=120
    )


PROBE = """
import json
import django

django.setup()
from django.conf import settings
from kombu.exceptions import ContentDisallowed
from kombu.serialization import loads

from memoryproject.celery import app

try:
    loads(PICKLED, "application/x-python-serialize", "binary", accept=app.conf.accept_content)
    pickle_refused = False
except ContentDisallowed:
    pickle_refused = True

print(json.dumps({
    "debug": settings.DEBUG,
    "secret_key_length": len(settings.SECRET_KEY),
    "task_serializer": app.conf.task_serializer,
    "result_serializer": app.conf.result_serializer,
    "accept_content": list(app.conf.accept_content),
    "result_accept_content": list(app.conf.result_accept_content or app.conf.accept_content),
    "event_serializer": app.conf.event_serializer,
    "broker_pickle_refused": pickle_refused,
    "cache_serializers": {alias: cache.get("OPTIONS", {}).get("SERIALIZER") for alias, cache in settings.CACHES.items()},
    "cache_backends": {alias: cache["BACKEND"] for alias, cache in settings.CACHES.items()},
    "session_serializer": settings.SESSION_SERIALIZER,
    "renderers": settings.REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"],
    "throttles": settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_CLASSES", []),
    "rate_limit": settings.MEMORY_RATE_LIMIT,
    "rate_window": settings.MEMORY_RATE_WINDOW,
    "upload_limit": settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
}))
"""


@pytest.fixture(scope="module")
def production() -> dict[str, Any]:
    """What the production settings resolve to, read in a process of their own."""
    pickled = pickle.dumps({"task": "conversations.tasks.messages_persist"})
    finished = run("-c", f"PICKLED = {pickled!r}\n{PROBE}")
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def test_check_deploy_is_clean_at_warning_level_with_the_production_settings():
    collected = run("manage.py", "collectstatic", "--noinput")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    finished = run("manage.py", "check", "--deploy", "--fail-level", "WARNING")

    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "System check identified no issues" in finished.stdout


def test_production_runs_without_debug_on_the_secret_key_it_is_given(production):
    assert production["debug"] is False
    assert production["secret_key_length"] >= 50


def test_celery_sends_and_accepts_json_only(production):
    assert production["task_serializer"] == "json"
    assert production["result_serializer"] == "json"
    assert production["event_serializer"] == "json"
    assert production["accept_content"] == ["json"]
    assert production["result_accept_content"] == ["json"]


def test_a_pickled_message_is_refused_by_the_workers_content_filter(production):
    assert production["broker_pickle_refused"] is True


def test_every_cache_serialises_json_and_sessions_too(production):
    assert production["cache_backends"] == {"default": "django_redis.cache.RedisCache"}
    assert production["cache_serializers"] == {"default": "django_redis.serializers.json.JSONSerializer"}
    assert production["session_serializer"] == "django.contrib.sessions.serializers.JSONSerializer"


def test_the_api_answers_json_only_and_is_throttled_per_tenant(production):
    assert production["renderers"] == ["rest_framework.renderers.JSONRenderer"]
    assert production["throttles"] == ["tenants.throttling.TenantRateThrottle"]
    assert production["rate_limit"] > 0
    assert production["rate_window"] > 0


def test_request_bodies_are_bounded(production):
    assert 0 < production["upload_limit"] <= 64 * 1024 * 1024
