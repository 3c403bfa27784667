"""The operators' admin for tenants and API keys, and its hardening (lockout, path, log)."""

import importlib
import re

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.urls import clear_url_caches
from rest_framework.test import APIClient

from conversations import cache
from tenants import services
from tenants.models import Tenant, TenantApiKey
from tests.factories import conversation_with_messages
from tests.faults import wait_until

TENANTS = "/admin/tenants/tenant/"
KEYS = "/admin/tenants/tenantapikey/"


def api_status(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client.get("/api/v1/conversations/").status_code


# --- Tenants ---------------------------------------------------------------------------------------


def test_an_operator_sees_only_their_tenant_and_cannot_rename_or_disable_it(operator_client, tenant, other_tenant):
    listed = operator_client.get(TENANTS)
    other = operator_client.get(f"{TENANTS}{other_tenant.pk}/change/")
    operator_client.post(
        f"{TENANTS}{tenant.pk}/change/", {"slug": "renamed", "name": "Acme Corp", "active": "", "settings": "{}"}
    )

    assert [t.slug for t in listed.context["cl"].result_list] == ["acme"]
    assert other.status_code == 404
    tenant.refresh_from_db()
    assert (tenant.slug, tenant.name, tenant.active) == ("acme", "Acme Corp", True)


def test_tenant_settings_overrides_are_validated_and_a_bad_one_names_the_setting(operator_client, tenant):
    url = f"{TENANTS}{tenant.pk}/change/"

    refused = operator_client.post(url, {"name": "acme", "settings": '{"MEMORY_HISTORY_LIMIT": "lots"}'})
    unknown = operator_client.post(url, {"name": "acme", "settings": '{"MEMORY_NOT_A_SETTING": 1}'})
    accepted = operator_client.post(url, {"name": "acme", "settings": '{"MEMORY_HISTORY_LIMIT": 20}'})

    assert refused.status_code == 200
    assert "MEMORY_HISTORY_LIMIT" in str(refused.context["adminform"].form.errors["settings"])
    assert unknown.status_code == 200
    assert "MEMORY_NOT_A_SETTING" in str(unknown.context["adminform"].form.errors["settings"])
    assert accepted.status_code == 302
    tenant.refresh_from_db()
    assert tenant.setting("MEMORY_HISTORY_LIMIT") == 20
    page = operator_client.get(url).content.decode()
    assert re.search(r"MEMORY_HISTORY_LIMIT</code></td><td>20</td><td>override", page)


@pytest.mark.parametrize(
    ("override", "bound"),
    [
        ('{"MEMORY_TOP_K": 1000000000000000000000000000000}', "at most 2,147,483,647"),
        ('{"MEMORY_CHAT_TIMEOUT": 1e16}', "at most 1,000,000,000"),
        ('{"MEMORY_TTL_STANDARD": 100000000000000000000}', "at most 2,147,483,647"),
    ],
)
def test_a_number_no_reader_could_take_is_refused_naming_its_bound(operator_client, tenant, override, bound):
    """A LIMIT past PostgreSQL's bigint, a thread's wait past what Python can time: set once, either would
    break every read of the tenant that uses it."""
    answer = operator_client.post(f"{TENANTS}{tenant.pk}/change/", {"name": "acme", "settings": override})

    assert answer.status_code == 200
    assert bound in str(answer.context["adminform"].form.errors["settings"])
    tenant.refresh_from_db()
    assert tenant.settings == {}


def test_the_largest_numbers_a_tenant_may_set_are_kept_as_set(operator_client, tenant):
    url = f"{TENANTS}{tenant.pk}/change/"

    answer = operator_client.post(url, {"name": "acme", "settings": '{"MEMORY_TOP_K": 2147483647, "MEMORY_CHAT_TIMEOUT": 1e9}'})

    assert answer.status_code == 302
    tenant.refresh_from_db()
    timeout = tenant.setting("MEMORY_CHAT_TIMEOUT")
    assert (tenant.setting("MEMORY_TOP_K"), timeout, type(timeout)) == (2147483647, 1e9, float)


def test_rebuilding_a_whole_tenant_runs_the_rebuild_cache_service_in_a_worker(client, tenant, other_tenant, worker):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-password-2"))
    conversation_with_messages(tenant, "c1", 3)
    conversation_with_messages(tenant, "c2", 2)
    conversation_with_messages(other_tenant, "g1", 2)

    answer = client.post(TENANTS, {"action": "rebuild_cache", "_selected_action": [tenant.pk]})

    assert answer.status_code == 302
    pairs = [("acme", "c1"), ("acme", "c2"), ("globex", "g1")]
    wait_until(lambda: cache.states(conversations=pairs)[("acme", "c2")].cached, message="acme's lists rebuilt")
    states = cache.states(conversations=pairs)
    assert [states[pair].length for pair in pairs[:2]] == [3, 2]
    assert not states[("globex", "g1")].cached
    assert LogEntry.objects.filter(object_id=str(tenant.pk), change_message__startswith="Queued a rebuild").exists()


# --- API keys ------------------------------------------------------------------------------------------


def test_a_key_created_in_the_admin_is_shown_once_stored_hashed_and_works(operator_client, tenant, other_tenant):
    for_other = operator_client.post(f"{KEYS}add/", {"name": "sneaky", "tenant": other_tenant.pk})
    answer = operator_client.post(f"{KEYS}add/", {"name": "agent-prod", "tenant": tenant.pk}, follow=True)

    assert for_other.status_code == 200
    assert "tenant" in for_other.context["adminform"].form.errors
    assert not TenantApiKey.objects.filter(name="sneaky").exists()
    shown = [str(message) for message in answer.context["messages"]]
    key = re.search(r"is: (\S+)\.", shown[0]).group(1)
    api_key = TenantApiKey.objects.get(name="agent-prod")
    assert api_key.tenant == tenant
    assert key not in api_key.hashed_key
    assert api_status(key) == 200
    assert key.encode() not in operator_client.get(f"{KEYS}{api_key.pk}/change/").content


def test_revoking_keys_refuses_them_at_once_and_only_for_this_tenant(operator_client, operator, tenant, other_tenant):
    mine, my_key = services.api_key_create(tenant=tenant, name="mine")
    theirs, their_key = services.api_key_create(tenant=other_tenant, name="theirs")
    assert api_status(my_key) == 200  # cached as valid

    answer = operator_client.post(KEYS, {"action": "revoke", "_selected_action": [mine.pk, theirs.pk]})

    assert answer.status_code == 302
    assert api_status(my_key) == 403 or api_status(my_key) == 401
    assert api_status(their_key) == 200
    assert LogEntry.objects.filter(user=operator, object_id=str(mine.pk), change_message="Revoked").exists()


def test_the_tenant_autocomplete_offers_an_operator_their_own_tenant_only(operator_client, tenant, other_tenant):
    answer = operator_client.get(
        "/admin/autocomplete/", {"app_label": "tenants", "model_name": "tenantapikey", "field_name": "tenant", "term": ""}
    )

    assert answer.status_code == 200
    assert [result["text"] for result in answer.json()["results"]] == ["acme"]


def test_the_key_list_shows_last_use_and_only_this_tenants_keys(operator_client, tenant, other_tenant):
    _, key = services.api_key_create(tenant=tenant, name="used")
    services.api_key_create(tenant=other_tenant, name="theirs")
    api_status(key)

    listed = operator_client.get(KEYS)

    rows = listed.context["cl"].result_list
    assert [row.name for row in rows] == ["used"]
    assert rows[0].last_used_at is not None
    assert b"theirs" not in listed.content


# --- Hardening -------------------------------------------------------------------------------------------


def test_the_login_locks_after_repeated_failures_even_for_the_right_password(client, operator, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(3):
        client.post("/admin/login/", {"username": "ada", "password": "wrong"})

    locked = client.post("/admin/login/", {"username": "ada", "password": "a-long-password-1"})

    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("hours", "said"),
    [(0.25, "15 minutes"), (1 / 60, "1 minute"), (1.5, "90 minutes"), (1, "1 hour"), (24, "24 hours")],
)
def test_the_lockout_page_says_how_long_the_lock_lasts_in_words_under_the_sites_header(client, operator, settings, hours, said):
    settings.AXES_FAILURE_LIMIT = 1
    settings.AXES_COOLOFF_TIME = hours
    client.post("/admin/login/", {"username": "ada", "password": "wrong"})

    locked = client.post("/admin/login/", {"username": "ada", "password": "a-long-password-1"})

    assert locked.status_code == 429
    page = locked.content.decode()
    assert re.search(r'<span id="lockout-time">\s*(.*?)\s*</span>', page).group(1) == said
    assert f">{admin.site.site_header}</a>" in page
    assert "Django administration" not in page
    assert not re.search(r"\bP(T\d|\dD)", page)  # no ISO 8601 duration (PT15M, P1DT...)


def test_a_correct_login_before_the_limit_resets_the_count(client, operator, settings):
    settings.AXES_FAILURE_LIMIT = 3
    client.post("/admin/login/", {"username": "ada", "password": "wrong"})
    client.post("/admin/login/", {"username": "ada", "password": "wrong"})

    answer = client.post("/admin/login/", {"username": "ada", "password": "a-long-password-1"})

    assert answer.status_code == 302
    assert client.session["_auth_user_id"] == str(operator.pk)


def test_the_admin_path_comes_from_the_settings(client, settings, db):
    import memoryproject.urls

    settings.ADMIN_PATH = "ops-console/"
    try:
        importlib.reload(memoryproject.urls)
        clear_url_caches()
        moved = client.get("/ops-console/login/")
        old = client.get("/admin/login/")
    finally:
        settings.ADMIN_PATH = "admin/"
        importlib.reload(memoryproject.urls)
        clear_url_caches()

    assert (moved.status_code, old.status_code) == (200, 404)


def test_create_operator_makes_a_staff_user_bound_to_one_tenant(tenant):
    from django.core.management import call_command

    call_command("create_operator", "grace", "--tenant", "acme", "--password", "a-long-password-4")

    user = get_user_model().objects.get(username="grace")
    assert user.is_staff
    assert not user.is_superuser
    assert user.tenant_staff.tenant == tenant
    assert user.has_perm("conversations.view_conversation")
    assert not user.has_perm("conversations.change_message")
    assert Tenant.objects.count() == 1
