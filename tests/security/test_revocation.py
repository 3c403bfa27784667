"""A revoked, expired or deleted API key, or a deactivated tenant, is refused within
``MEMORY_AUTH_REVALIDATE`` seconds on every web process, whatever path made the change: the admin's
action, the management command, a model save, a queryset update, raw SQL, or the expiry time passing.

Each test keeps one key busy from several threads of this process (the whole Django stack) and
through two real gunicorn processes (each with its own memory, sharing Redis and PostgreSQL), makes
the change, and checks every request that began more than the bound after it: a 401 with the JSON
error document. The bound is one second here (the default is five).
"""

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from tenants import services as tenant_services
from tenants.models import Tenant, TenantApiKey
from tests.faults import WebServer, wait_until

BOUND = 1.0
CONVERSATIONS = "/api/v1/conversations/"
THREADS_IN_PROCESS = 3
THREADS_PER_SERVER = 2


@pytest.fixture(scope="module")
def servers(worker_env: dict[str, str]) -> Iterator[list[WebServer]]:
    env = worker_env | {"MEMORY_AUTH_REVALIDATE": str(BOUND)}
    started = [WebServer(env=env, name=f"revocation-{number}", workers=1) for number in (1, 2)]
    try:
        for server in started:
            server.start()
        yield started
    finally:
        for server in started:
            server.stop()


@dataclass
class Answer:
    started: float
    status: int
    body: bytes
    where: str


@dataclass
class Load:
    """Requests with one key, from threads of this process and through each server, until stopped."""

    key: str
    servers: list[WebServer]
    answers: list[Answer] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for number in range(THREADS_IN_PROCESS):
            self.threads.append(threading.Thread(target=self.in_process, args=(f"thread-{number}",)))
        for server in self.servers:
            for _ in range(THREADS_PER_SERVER):
                self.threads.append(threading.Thread(target=self.over_http, args=(server,)))
        for thread in self.threads:
            thread.start()
        for where in {*(f"thread-{n}" for n in range(THREADS_IN_PROCESS)), *(s.url for s in self.servers)}:
            wait_until(lambda where=where: self.succeeded(where), timeout=30, message=f"a first 200 from {where}")

    def succeeded(self, where: str) -> bool:
        with self.lock:
            return any(answer.where == where and answer.status == 200 for answer in self.answers)

    def record(self, started: float, status: int, body: bytes, where: str) -> None:
        with self.lock:
            self.answers.append(Answer(started, status, body, where))

    def in_process(self, where: str) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {self.key}")
        try:
            while not self.stopping.is_set():
                started = time.time()
                answer = client.get(CONVERSATIONS)
                self.record(started, answer.status_code, answer.content, where)
        finally:
            connection.close()

    def over_http(self, server: WebServer) -> None:
        with requests.Session() as session:
            session.headers["Authorization"] = f"Api-Key {self.key}"
            while not self.stopping.is_set():
                started = time.time()
                answer = session.get(server.url + CONVERSATIONS, timeout=10)
                self.record(started, answer.status_code, answer.content, server.url)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)


def refused_as_json(answer: Answer) -> bool:
    if answer.status not in (401, 403):
        return False
    error = json.loads(answer.body)["error"]
    return error["code"] == "authentication_failed" and bool(error["message"])


def assert_refused_within_the_bound(load: Load, changed_at: float) -> None:
    """Keep the load on past the bound, then check every request that began after it."""
    time.sleep(BOUND + 1.5)  # the load runs meanwhile; the test asserts on what it saw, not on timing
    load.stop()
    after = [answer for answer in load.answers if answer.started > changed_at + BOUND]
    before = [answer for answer in load.answers if answer.started < changed_at]
    assert any(answer.status == 200 for answer in before)
    for where in {answer.where for answer in load.answers}:
        assert sum(answer.where == where for answer in after) >= 3, f"too little load from {where} after the bound"
    accepted = [
        (round(answer.started - changed_at, 3), answer.where, answer.status) for answer in after if not refused_as_json(answer)
    ]
    assert accepted == [], "requests still answered after the bound"


def revoke_in_the_admin(api_key: TenantApiKey, admin: Any) -> None:
    answer = admin.post("/admin/tenants/tenantapikey/", {"action": "revoke", "_selected_action": [api_key.pk], "index": 0})
    assert answer.status_code == 302, answer.content
    assert TenantApiKey.objects.get(pk=api_key.pk).revoked


def revoke_with_the_command(api_key: TenantApiKey, admin: Any) -> None:
    call_command("revoke_api_key", api_key.prefix, stdout=open("/dev/null", "w"))  # noqa: SIM115


def revoke_by_a_model_save(api_key: TenantApiKey, admin: Any) -> None:
    api_key.revoked = True
    api_key.save()


def revoke_by_a_queryset_update(api_key: TenantApiKey, admin: Any) -> None:
    TenantApiKey.objects.filter(pk=api_key.pk).update(revoked=True)


def revoke_by_raw_sql(api_key: TenantApiKey, admin: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TenantApiKey._meta.db_table} SET revoked = true WHERE id = %s", [api_key.pk])  # noqa: S608


def expire_by_raw_sql(api_key: TenantApiKey, admin: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TenantApiKey._meta.db_table} SET expiry_date = now() WHERE id = %s", [api_key.pk])  # noqa: S608


def delete_by_raw_sql(api_key: TenantApiKey, admin: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TenantApiKey._meta.db_table} WHERE id = %s", [api_key.pk])  # noqa: S608


def deactivate_the_tenant_by_a_queryset_update(api_key: TenantApiKey, admin: Any) -> None:
    Tenant.objects.filter(pk=api_key.tenant_id).update(active=False)


@pytest.fixture
def admin(client: Any, operator: Any) -> Any:
    client.force_login(operator)
    return client


@pytest.mark.parametrize(
    "change",
    [
        revoke_in_the_admin,
        revoke_with_the_command,
        revoke_by_a_model_save,
        revoke_by_a_queryset_update,
        revoke_by_raw_sql,
        expire_by_raw_sql,
        delete_by_raw_sql,
        deactivate_the_tenant_by_a_queryset_update,
    ],
)
def test_a_key_changed_by_any_path_is_refused_on_every_process_within_the_bound(
    change: Callable[[TenantApiKey, Any], None], servers, admin, tenant, transactional_db, settings
):
    settings.MEMORY_AUTH_REVALIDATE = BOUND
    api_key, key = tenant_services.api_key_create(tenant=tenant, name="busy")
    load = Load(key=key, servers=servers)
    load.start()
    try:
        time.sleep(BOUND)  # every process has cached and used the record for a while
        change(api_key, admin)
        changed_at = time.time()
    except BaseException:
        load.stop()
        raise
    assert_refused_within_the_bound(load, changed_at)


def test_a_key_expiring_while_busy_is_refused_from_its_expiry_time_on_every_process(servers, tenant, transactional_db, settings):
    settings.MEMORY_AUTH_REVALIDATE = BOUND
    expires_at = timezone.now() + timedelta(seconds=3)
    _, key = tenant_services.api_key_create(tenant=tenant, name="busy", expiry_date=expires_at)
    load = Load(key=key, servers=servers)
    load.start()
    wait_until(lambda: timezone.now() > expires_at, timeout=10, message="the expiry time")

    time.sleep(1.5)
    load.stop()

    after = [answer for answer in load.answers if answer.started > expires_at.timestamp()]
    assert {answer.where for answer in after} == {answer.where for answer in load.answers}
    assert [answer for answer in after if not refused_as_json(answer)] == []
