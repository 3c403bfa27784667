"""The admin login's lockout (tenants/lockout.py), driven through the real login view: one anonymous
client cannot lock an administrator out. Failures lock one username from one address, or one
address trying many usernames; a username failed from many addresses is slowed (one try per
address), never locked for an address that has not failed. Behind a trusted proxy the address is
the one the proxy saw, whatever a client writes in ``X-Forwarded-For``."""

from typing import Any

import pytest
from django.test import Client

from tenants import services as tenant_services

LOGIN = "/admin/login/"
PASSWORD = "a-long-password-1"
ATTACKER = "198.51.100.66"
ADMIN_ADDRESS = "203.0.113.5"


@pytest.fixture(autouse=True)
def limits(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    settings.MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT = 6
    settings.MEMORY_LOGIN_USER_FAILURE_LIMIT = 9


def attempt(username: str, password: str, **meta: str) -> tuple[int, Client]:
    client = Client(**meta)
    answer = client.post(LOGIN, {"username": username, "password": password})
    if answer.status_code == 302:
        assert client.session["_auth_user_id"]
    return answer.status_code, client


def logs_in(username: str = "ada", **meta: str) -> bool:
    return attempt(username, PASSWORD, **meta)[0] == 302


def test_failures_from_one_address_lock_that_address_out_not_the_administrator(operator):
    for _ in range(10):
        attempt("ada", "wrong", REMOTE_ADDR=ATTACKER)

    status, client = attempt("ada", PASSWORD, REMOTE_ADDR=ATTACKER)
    assert status == 429
    assert "_auth_user_id" not in client.session
    assert logs_in(REMOTE_ADDR=ADMIN_ADDRESS)


def test_one_address_trying_many_usernames_is_locked_for_every_username(operator, tenant):
    tenant_services.operator_create(tenant=tenant, username="bea", password=PASSWORD)
    for number in range(6):
        attempt(f"guess-{number}", "wrong", REMOTE_ADDR=ATTACKER)

    assert attempt("bea", PASSWORD, REMOTE_ADDR=ATTACKER)[0] == 429
    assert logs_in("bea", REMOTE_ADDR=ADMIN_ADDRESS)


def test_a_username_failed_from_many_addresses_gets_one_try_per_address_and_is_never_locked(operator):
    for number in range(12):
        attempt("ada", "wrong", REMOTE_ADDR=f"198.51.100.{number}")

    assert attempt("ada", "wrong", REMOTE_ADDR="192.0.2.1")[0] == 429  # one failure locks a new address now
    assert attempt("ada", PASSWORD, REMOTE_ADDR="192.0.2.1")[0] == 429
    assert logs_in(REMOTE_ADDR=ADMIN_ADDRESS)  # an address that has not failed still logs in


def test_behind_a_proxy_that_is_not_trusted_a_forged_header_does_not_move_the_lockout(operator):
    for number in range(10):
        attempt("ada", "wrong", REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{number}")

    assert attempt("ada", PASSWORD, REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR="192.0.2.200")[0] == 429
    assert logs_in(REMOTE_ADDR=ADMIN_ADDRESS)


def test_behind_a_trusted_proxy_a_client_naming_the_administrators_address_locks_only_itself(operator, settings):
    settings.MEMORY_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = {"REMOTE_ADDR": "10.0.0.2"}
    for _ in range(10):
        # The proxy appends the address it saw to what the client sent.
        attempt("ada", "wrong", **proxy, HTTP_X_FORWARDED_FOR=f"{ADMIN_ADDRESS}, {ATTACKER}")

    assert attempt("ada", PASSWORD, **proxy, HTTP_X_FORWARDED_FOR=ATTACKER)[0] == 429
    assert logs_in(**proxy, HTTP_X_FORWARDED_FOR=ADMIN_ADDRESS)


def test_a_correct_login_resets_the_failures_of_that_username_from_that_address(operator):
    attempt("ada", "wrong", REMOTE_ADDR=ADMIN_ADDRESS)
    attempt("ada", "wrong", REMOTE_ADDR=ADMIN_ADDRESS)
    assert logs_in(REMOTE_ADDR=ADMIN_ADDRESS)

    attempt("ada", "wrong", REMOTE_ADDR=ADMIN_ADDRESS)
    attempt("ada", "wrong", REMOTE_ADDR=ADMIN_ADDRESS)
    assert logs_in(REMOTE_ADDR=ADMIN_ADDRESS)
