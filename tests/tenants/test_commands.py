"""Operator commands: ``create_tenant`` and ``create_api_key`` print a working key once; errors are a
``CommandError`` (a non-zero exit) with a message saying what to do; ``rebuild_cache`` refuses an
unknown tenant."""

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tenants.models import Tenant, TenantApiKey

ROOT = Path(__file__).resolve().parent.parent.parent
KEY = re.compile(r"[A-Za-z0-9]{8}\.[A-Za-z0-9]{32}")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def the_key_in(output: str) -> str:
    keys = KEY.findall(output)
    assert len(keys) == 1, output  # printed exactly once
    return keys[0]


def works(key: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client.get("/api/v1/conversations/").status_code == 200


def test_create_tenant_prints_its_first_key_once_and_the_key_works(db):
    output = run("create_tenant", "acme2", "--name", "Acme Two")

    key = the_key_in(output)
    assert works(key)
    tenant = Tenant.objects.get(slug="acme2")
    assert tenant.name == "Acme Two"
    assert TenantApiKey.objects.get(tenant=tenant).prefix == key.partition(".")[0]

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    client.post("/api/v1/conversations/", {"conversation_id": "c1"}, format="json")
    assert client.get("/api/v1/conversations/").json()["count"] == 1


def test_create_tenant_quiet_prints_only_the_key(db):
    output = run("create_tenant", "acme2", "--quiet")

    assert output.strip() == the_key_in(output)


def test_create_tenant_refuses_a_slug_that_exists(tenant):
    with pytest.raises(CommandError, match="already exists"):
        run("create_tenant", "acme")

    assert TenantApiKey.objects.filter(tenant=tenant).count() == 0


@pytest.mark.parametrize("slug", ["Acme", "has space", "-leading-hyphen", "under_score", "x" * 64])
def test_create_tenant_refuses_an_invalid_slug(db, slug):
    with pytest.raises(CommandError, match="lowercase letters, digits or hyphens"):
        run("create_tenant", "--", slug)  # "--": a slug may start with a hyphen

    assert not Tenant.objects.exists()


def test_create_api_key_prints_another_working_key(tenant):
    first = the_key_in(run("create_api_key", "--tenant", "acme"))
    second = the_key_in(run("create_api_key", "--tenant", "acme", "--name", "ci"))

    assert first != second
    assert works(first)
    assert works(second)
    assert set(TenantApiKey.objects.filter(tenant=tenant).values_list("name", flat=True)) == {"default", "ci"}


def test_create_api_key_can_make_a_key_that_expires(tenant):
    key = the_key_in(run("create_api_key", "--tenant", "acme", "--expires-in-days", "2", "--quiet"))

    api_key = TenantApiKey.objects.get(prefix=key.partition(".")[0])
    assert api_key.expiry_date is not None
    assert works(key)


def test_create_api_key_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        run("create_api_key", "--tenant", "nope")

    assert not TenantApiKey.objects.exists()


# An argument of bytes that are not UTF-8 reaches Python with lone surrogates ("\xff" becomes
# "\udcff"); PostgreSQL cannot store them, nor a NUL given through call_command.
UNSTORABLE_NAMES = ["caf\udce9", "nul \x00 here"]


@pytest.mark.parametrize("name", UNSTORABLE_NAMES)
@pytest.mark.parametrize("option", ["--name", "--key-name"])
def test_create_tenant_refuses_a_name_it_cannot_store_and_creates_nothing(db, option, name):
    with pytest.raises(CommandError, match="name"):
        run("create_tenant", "acme2", option, name)

    assert not Tenant.objects.filter(slug="acme2").exists()
    assert not TenantApiKey.objects.exists()


@pytest.mark.parametrize("name", UNSTORABLE_NAMES)
def test_create_api_key_refuses_a_name_it_cannot_store(tenant, name):
    with pytest.raises(CommandError, match="name"):
        run("create_api_key", "--tenant", "acme", "--name", name)

    assert not TenantApiKey.objects.filter(tenant=tenant).exists()


@pytest.mark.parametrize("username", UNSTORABLE_NAMES)
def test_create_operator_refuses_a_username_it_cannot_store(tenant, username):
    with pytest.raises(CommandError, match="username"):
        run("create_operator", username, "--tenant", "acme", "--password", "a-long-password-1")


def test_rebuild_cache_refuses_an_unknown_tenant(tenant):
    with pytest.raises(CommandError, match="No tenant 'nope'.*acme"):
        run("rebuild_cache", "--tenant", "nope")


def test_rebuild_cache_for_an_unknown_tenant_exits_non_zero(worker_env, db):
    finished = subprocess.run(
        [sys.executable, "manage.py", "rebuild_cache", "--tenant", "nope"],
        cwd=ROOT,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode != 0
    assert "No tenant 'nope'" in finished.stderr
