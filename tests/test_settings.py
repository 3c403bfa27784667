"""The settings the promises rely on are really read (STYLE.md, slips to avoid): a misspelled Celery or
cache setting would be silently ignored, so these tests read the configuration where the libraries
read it (the Celery app, the broker, the raw bytes in Redis), not in the settings module."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from amqp.exceptions import PreconditionFailed
from django.conf import settings
from django.core.cache import cache as django_cache
from django_redis import get_redis_connection

from conversations import cache, tasks
from memoryproject.celery import app as celery_app
from tests.factories import message_payload

ROOT = Path(__file__).resolve().parent.parent


# --- Celery --------------------------------------------------------------------------------------


def test_the_celery_app_reads_the_write_path_settings():
    conf = celery_app.conf

    assert conf.task_serializer == "json"
    assert conf.result_serializer == "json"
    assert list(conf.accept_content) == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.broker_transport_options["confirm_publish"] is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_default_delivery_mode == "persistent"
    assert conf.task_default_queue == settings.MEMORY_QUEUE
    assert [(queue.name, queue.durable, queue.exchange.durable) for queue in conf.task_queues] == [
        (settings.MEMORY_QUEUE, True, True),
        (settings.MEMORY_DERIVED_QUEUE, True, True),
    ]


def test_the_persist_tasks_are_acknowledged_late_and_rejected_when_their_worker_dies():
    for name in (tasks.messages_persist.name, tasks.memory_persist.name):
        task = celery_app.tasks[name]  # the task the worker runs, as registered in the app
        assert task.acks_late is True
        assert task.reject_on_worker_lost is True
        assert task.serializer == "json"


def test_the_persist_queue_is_durable_on_the_broker():
    with celery_app.connection_for_write() as broker:
        celery_app.amqp.queues[settings.MEMORY_QUEUE](broker.default_channel).declare()
    with celery_app.connection_for_write() as broker:
        # RabbitMQ refuses to redeclare a queue with other properties: the live queue is durable.
        with pytest.raises(PreconditionFailed):
            broker.default_channel.queue_declare(settings.MEMORY_QUEUE, durable=False)


def test_a_persist_task_waits_in_the_broker_as_a_persistent_json_message(api, tenant, no_worker):
    answer = api.post("/api/v1/conversations/c1/messages/", message_payload(content="durable"), format="json")
    assert answer.status_code == 201

    with celery_app.connection_for_write() as broker:
        message = broker.default_channel.basic_get(settings.MEMORY_QUEUE, no_ack=True)

    assert message is not None
    assert message.properties["delivery_mode"] == 2  # persistent
    assert message.properties["content_type"] == "application/json"
    assert message.headers["task"] == "conversations.tasks.messages_persist"
    args, _kwargs, _embed = json.loads(message.body)
    assert args[0]["messages"][0]["content"] == "durable"


# --- The cache -----------------------------------------------------------------------------------


def test_the_django_cache_stores_json_not_pickle(db):
    value = {"tenant": "acme", "numbers": [1, 2.5], "nested": {"ok": True}}

    django_cache.set("settings-probe", value, timeout=60)

    connection = get_redis_connection("default")
    [raw_key] = [found for found in connection.scan_iter(match="*settings-probe*")]
    raw = connection.get(raw_key)
    assert not raw.startswith(b"\x80")  # the pickle protocol marker
    assert json.loads(raw) == value


def test_the_cached_api_key_record_is_json(api, tenant):
    api.get("/api/v1/conversations/")

    connection = get_redis_connection("default")
    [raw_key] = list(connection.scan_iter(match="*auth:apikey:*"))
    assert json.loads(connection.get(raw_key))["tenant_slug"] == "acme"


def test_every_value_the_service_caches_is_json_and_every_key_expires(api, tenant, no_worker):
    api.post(
        "/api/v1/conversations/c1/messages/",
        {"messages": [message_payload(), message_payload(metadata={"é": "ü"})]},
        format="json",
    )
    api.put("/api/v1/conversations/c1/memory/", {"messages": [{"content": "remember"}], "metadata": {"k": "v"}}, format="json")
    api.get("/api/v1/conversations/c1/messages/")
    connection = get_redis_connection("default")

    kinds = {}
    for name in connection.scan_iter(match=cache.key("acme", "c1", "*")):
        kind = connection.type(name).decode()
        kinds[name.decode()] = kind
        if kind == "string":
            values = [connection.get(name)]
        elif kind == "list":
            values = connection.lrange(name, 0, -1)
        else:
            values = list(connection.hgetall(name).values())
        for value in values:
            json.loads(value)
        assert connection.ttl(name) > 0, name

    suffixes = {name.split(":", 2)[2].split(":")[0]: kind for name, kind in kinds.items()}
    assert suffixes == {"messages": "list", "message": "string", "memory": "string", "pending": "hash", "state": "hash"}


def test_redis_hash_tags_are_read_from_the_environment():
    probe = "import django; django.setup(); from conversations import cache; print(cache.key('acme', 'c1', 'messages'))"
    environment = dict(os.environ, DJANGO_SETTINGS_MODULE="memoryproject.settings.test", MEMORY_REDIS_HASH_TAGS="true")
    finished = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert finished.stdout.strip() == "{acme:c1}:messages", finished.stderr
    assert cache.key("acme", "c1", "messages") == "acme:c1:messages"  # off unless asked for


# --- Production settings -------------------------------------------------------------------------


def production_environment() -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("DJANGO_", "MEMORY_"))}
    environment.update(
        DJANGO_SETTINGS_MODULE="memoryproject.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DATABASE_URL="postgres://memory@127.0.0.1:5432/memory",
        REDIS_URL="redis://127.0.0.1:6379/0",
        CELERY_BROKER_URL="amqp://guest:guest@127.0.0.1:5672//",
    )
    return environment


def test_check_deploy_reports_nothing_with_the_production_settings(tmp_path):
    # Static files collected first, as every deployment does (without them, memoryproject.E001).
    environment = dict(production_environment(), DJANGO_STATIC_ROOT=str(tmp_path))
    for command in (["collectstatic", "--noinput"], ["check", "--deploy", "--fail-level", "WARNING"]):
        finished = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert finished.returncode == 0, finished.stderr

    assert finished.stdout.strip() == "System check identified no issues (0 silenced)."


def test_production_settings_have_no_default_for_the_values_it_must_be_given():
    probe = """
import importlib, os, sys
from django.core.exceptions import ImproperlyConfigured
for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
    saved = os.environ.pop(name)
    for module in [m for m in sys.modules if m.startswith("memoryproject.settings")]:
        del sys.modules[module]
    try:
        importlib.import_module("memoryproject.settings.production")
        print("DEFAULTED", name)
    except ImproperlyConfigured:
        print("REQUIRED", name)
    os.environ[name] = saved
"""
    finished = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=production_environment(), capture_output=True, text=True, timeout=60
    )

    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split("\n")[:-1] == [
        "REQUIRED DJANGO_SECRET_KEY",
        "REQUIRED DATABASE_URL",
        "REQUIRED REDIS_URL",
        "REQUIRED CELERY_BROKER_URL",
    ]


@pytest.mark.parametrize("value", ["-1", "ten"])
def test_a_message_id_clock_skew_that_is_not_a_count_of_seconds_stops_the_process(value):
    finished = subprocess.run(
        [sys.executable, "-c", "import memoryproject.settings.production"],
        cwd=ROOT,
        env={**production_environment(), "MEMORY_MESSAGE_ID_CLOCK_SKEW": value},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode != 0
    assert "MEMORY_MESSAGE_ID_CLOCK_SKEW" in finished.stderr or "ten" in finished.stderr
