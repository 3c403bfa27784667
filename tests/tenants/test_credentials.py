"""Tenants' provider credentials (``ProviderCredential``): stored encrypted with the keys of
``MEMORY_CREDENTIAL_KEYS`` and re-encrypted by a rotation; written in the admin and by
``manage.py provider_credential`` (from standard input), and never shown by either: only the hint."""

import io
import logging
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.test import override_settings

from tenants import services
from tenants.models import ProviderCredential
from tenants.secrets import SecretUnreadable
from tests.factories import TenantFactory

SECRET = "sk-test-0123456789abcdefWXYZ"
OTHER_SECRET = "sk-test-9876543210fedcbaQRST"
CREDENTIALS = "/admin/tenants/providercredential/"
TENANTS = "/admin/tenants/tenant/"


def new_key() -> str:
    return Fernet.generate_key().decode()


def stored(tenant: Any, provider: str = "openai") -> ProviderCredential:
    return ProviderCredential.objects.for_tenant(tenant).get(provider=provider)


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def shows_nothing_secret(page: bytes, credential: ProviderCredential) -> bool:
    return SECRET.encode() not in page and credential.encrypted_secret.encode() not in page


# --- Encryption ----------------------------------------------------------------------------------------


def test_a_credential_is_stored_encrypted_and_read_back(tenant):
    old = new_key()
    with override_settings(MEMORY_CREDENTIAL_KEYS=[old]):
        services.provider_credential_set(tenant=tenant, provider="OpenAI", secret=f"  {SECRET}\n")
        credential = stored(tenant)

        assert SECRET not in credential.encrypted_secret
        assert SECRET[-4:] not in credential.encrypted_secret
        assert credential.hint == f"…{SECRET[-4:]}"
        assert credential.secret() == SECRET
        assert services.provider_credential_secret(tenant=tenant, provider="openai") == SECRET
        assert SECRET not in repr(credential)
        assert SECRET not in str(credential)


def test_another_key_cannot_read_it_until_a_rotation_re_encrypts_it(tenant):
    old, new = new_key(), new_key()
    with override_settings(MEMORY_CREDENTIAL_KEYS=[old]):
        services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    before = stored(tenant).encrypted_secret

    with override_settings(MEMORY_CREDENTIAL_KEYS=[new]), pytest.raises(SecretUnreadable, match="MEMORY_CREDENTIAL_KEYS"):
        stored(tenant).secret()

    with override_settings(MEMORY_CREDENTIAL_KEYS=[new, old]):
        assert stored(tenant).secret() == SECRET  # every key decrypts
        assert services.provider_credentials_rotate() == 1

    after = stored(tenant)
    assert after.encrypted_secret != before
    assert after.hint == f"…{SECRET[-4:]}"
    with override_settings(MEMORY_CREDENTIAL_KEYS=[new]):
        assert after.secret() == SECRET
    with override_settings(MEMORY_CREDENTIAL_KEYS=[old]), pytest.raises(SecretUnreadable):
        after.secret()


# --- Admin ------------------------------------------------------------------------------------------------


def test_a_superuser_adds_a_credential_and_no_page_shows_the_secret(admin_client, tenant, logged):
    answer = admin_client.post(f"{CREDENTIALS}add/", {"tenant": tenant.pk, "provider": "OpenAI", "secret": SECRET})

    assert answer.status_code == 302
    credential = stored(tenant)
    assert credential.secret() == SECRET
    listed = admin_client.get(CREDENTIALS)
    change = admin_client.get(f"{CREDENTIALS}{credential.pk}/change/")
    add = admin_client.get(f"{CREDENTIALS}add/")
    history = admin_client.get(f"{CREDENTIALS}{credential.pk}/history/")
    tenant_page = admin_client.get(f"{TENANTS}{tenant.pk}/change/")
    for page in (listed, change, add, history, tenant_page):
        assert page.status_code == 200
        assert shows_nothing_secret(page.content, credential)
    assert credential.hint.encode() in listed.content
    assert credential.hint.encode() in change.content
    assert b'type="password"' in change.content
    assert [c.provider for c in listed.context["cl"].result_list] == ["openai"]
    assert f"<code>openai</code> {credential.hint}".encode() in tenant_page.content
    assert SECRET not in logged.text
    assert all(SECRET not in repr(record.msg) for record in logged.records)


def test_a_blank_secret_keeps_the_stored_one_and_a_new_one_replaces_it(admin_client, tenant):
    credential = services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    url = f"{CREDENTIALS}{credential.pk}/change/"

    kept = admin_client.post(url, {"provider": "openai", "secret": ""})

    assert kept.status_code == 302
    assert stored(tenant).secret() == SECRET
    replaced = admin_client.post(url, {"provider": "openai", "secret": OTHER_SECRET})
    assert replaced.status_code == 302
    assert stored(tenant).secret() == OTHER_SECRET
    assert stored(tenant).hint == f"…{OTHER_SECRET[-4:]}"


def test_the_add_form_refuses_a_missing_secret_a_bad_provider_and_a_duplicate(admin_client, tenant):
    services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    add = f"{CREDENTIALS}add/"

    missing = admin_client.post(add, {"tenant": tenant.pk, "provider": "anthropic", "secret": ""})
    bad = admin_client.post(add, {"tenant": tenant.pk, "provider": "open ai!", "secret": OTHER_SECRET})
    duplicate = admin_client.post(add, {"tenant": tenant.pk, "provider": "OpenAI", "secret": OTHER_SECRET})

    assert missing.status_code == 200
    assert "secret" in missing.context["adminform"].form.errors
    assert bad.status_code == 200
    assert "lowercase" in str(bad.context["adminform"].form.errors["provider"])
    assert duplicate.status_code == 200
    assert "already has a openai credential" in str(duplicate.context["adminform"].form.errors["provider"])
    for page in (missing, bad, duplicate):
        assert OTHER_SECRET.encode() not in page.content  # the submitted key is not echoed back
    assert [c.provider for c in ProviderCredential.objects.for_tenant(tenant)] == ["openai"]
    assert stored(tenant).secret() == SECRET


def test_renaming_to_a_provider_the_tenant_has_is_a_form_error(admin_client, tenant):
    services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    other = services.provider_credential_set(tenant=tenant, provider="anthropic", secret=OTHER_SECRET)

    answer = admin_client.post(f"{CREDENTIALS}{other.pk}/change/", {"provider": "openai", "secret": ""})

    assert answer.status_code == 200
    assert "provider" in answer.context["adminform"].form.errors


@pytest.fixture
def credential_operator_client(operator_client: Any) -> Any:
    """The acme operator: the operators' group may manage provider credentials, narrowed to acme."""
    return operator_client


def test_an_operator_sees_and_edits_only_their_tenants_credentials(credential_operator_client, tenant, other_tenant):
    client = credential_operator_client
    mine = services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    theirs = services.provider_credential_set(tenant=other_tenant, provider="anthropic", secret=OTHER_SECRET)

    listed = client.get(CREDENTIALS)
    other_page = client.get(f"{CREDENTIALS}{theirs.pk}/change/")
    other_post = client.post(f"{CREDENTIALS}{theirs.pk}/change/", {"provider": "anthropic", "secret": "sk-replaced-by-ada"})
    for_other = client.post(f"{CREDENTIALS}add/", {"tenant": other_tenant.pk, "provider": "mistralai", "secret": SECRET})
    own = client.post(f"{CREDENTIALS}{mine.pk}/change/", {"provider": "openai", "secret": OTHER_SECRET})

    assert listed.status_code == 200
    assert [c.provider for c in listed.context["cl"].result_list] == ["openai"]
    assert b"anthropic" not in listed.content
    assert other_page.status_code == 404
    assert other_post.status_code == 404
    assert stored(other_tenant, "anthropic").secret() == OTHER_SECRET
    assert for_other.status_code == 200
    assert "tenant" in for_other.context["adminform"].form.errors
    assert not ProviderCredential.unscoped.filter(provider="mistralai").exists()
    assert own.status_code == 302
    assert stored(tenant).secret() == OTHER_SECRET


# --- Command ----------------------------------------------------------------------------------------------


def run(*args: str, stdin: str = "") -> str:
    out = io.StringIO()
    call_command("provider_credential", *args, stdin=io.StringIO(stdin), stdout=out)
    return out.getvalue()


def test_the_command_stores_the_secret_from_standard_input_and_prints_its_hint_only(tenant, logged):
    output = run("--tenant", "acme", "--provider", "openai", stdin=f"{SECRET}\n")

    assert output.strip() == f"Stored the openai credential of acme (…{SECRET[-4:]})."
    assert stored(tenant).secret() == SECRET
    assert SECRET not in logged.text
    assert all(SECRET not in repr(record.msg) for record in logged.records)


def test_the_command_replaces_a_stored_secret(tenant):
    run("--tenant", "acme", "--provider", "openai", stdin=f"{SECRET}\n")
    run("--tenant", "acme", "--provider", "openai", stdin=f"{OTHER_SECRET}\n")

    assert ProviderCredential.objects.for_tenant(tenant).count() == 1
    assert stored(tenant).secret() == OTHER_SECRET


def test_the_command_lists_providers_and_hints(tenant, other_tenant):
    services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    services.provider_credential_set(tenant=tenant, provider="anthropic", secret=OTHER_SECRET)
    services.provider_credential_set(tenant=other_tenant, provider="groq", secret=SECRET)

    output = run("--list", "--tenant", "acme")

    assert output.splitlines() == [f"anthropic …{OTHER_SECRET[-4:]}", f"openai …{SECRET[-4:]}"]
    assert SECRET not in output
    assert OTHER_SECRET not in output
    TenantFactory(slug="initech")
    assert run("--list", "--tenant", "initech").startswith("initech has no provider credential; store one with:")


def test_the_command_deletes_and_says_whether_there_was_one(tenant, other_tenant):
    services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
    services.provider_credential_set(tenant=other_tenant, provider="openai", secret=SECRET)

    deleted = run("--delete", "--tenant", "acme", "--provider", "openai")
    again = run("--delete", "--tenant", "acme", "--provider", "openai")

    assert deleted.strip() == "Deleted the openai credential of acme."
    assert "had no openai credential" in again
    assert not ProviderCredential.objects.for_tenant(tenant).exists()
    assert ProviderCredential.objects.for_tenant(other_tenant).exists()


def test_the_command_rotates_every_tenants_credentials(tenant, other_tenant):
    old, new = new_key(), new_key()
    with override_settings(MEMORY_CREDENTIAL_KEYS=[old]):
        services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
        services.provider_credential_set(tenant=other_tenant, provider="openai", secret=OTHER_SECRET)

    with override_settings(MEMORY_CREDENTIAL_KEYS=[new, old]):
        output = run("--rotate")

    assert output.strip() == "Encrypted 2 credentials again with the first of MEMORY_CREDENTIAL_KEYS."
    with override_settings(MEMORY_CREDENTIAL_KEYS=[new]):
        assert stored(tenant).secret() == SECRET
        assert stored(other_tenant).secret() == OTHER_SECRET


def test_a_rotation_without_the_old_key_fails_and_changes_nothing(tenant, other_tenant):
    old, new = new_key(), new_key()
    with override_settings(MEMORY_CREDENTIAL_KEYS=[old]):
        services.provider_credential_set(tenant=tenant, provider="openai", secret=SECRET)
        services.provider_credential_set(tenant=other_tenant, provider="openai", secret=OTHER_SECRET)
    before = sorted(ProviderCredential.unscoped.values_list("encrypted_secret", flat=True))

    with override_settings(MEMORY_CREDENTIAL_KEYS=[new]), pytest.raises(CommandError, match="keep the key it was encrypted with"):
        run("--rotate")

    assert sorted(ProviderCredential.unscoped.values_list("encrypted_secret", flat=True)) == before


def test_the_command_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="No tenant 'nope'; create it with: manage.py create_tenant nope"):
        run("--tenant", "nope", "--provider", "openai", stdin=f"{SECRET}\n")

    assert not ProviderCredential.unscoped.exists()


def test_the_command_refuses_an_empty_secret_and_a_bad_provider(tenant):
    with pytest.raises(CommandError, match="No API key given"):
        run("--tenant", "acme", "--provider", "openai", stdin="\n")
    with pytest.raises(CommandError, match="not a provider name"):
        run("--tenant", "acme", "--provider", "open ai", stdin=f"{SECRET}\n")

    assert not ProviderCredential.objects.for_tenant(tenant).exists()


def test_the_command_asks_on_a_terminal_without_echo(tenant, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    asked = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: asked.append(prompt) or SECRET)
    out = io.StringIO()

    call_command("provider_credential", "--tenant", "acme", "--provider", "openai", stdin=Terminal(), stdout=out)

    assert asked == ["API key of acme for openai (not echoed): "]
    assert stored(tenant).secret() == SECRET
    assert SECRET not in out.getvalue()


def test_a_provider_is_spelled_one_way_in_the_model_setting_and_in_its_credential(tenant):
    from tenants.chat_models import parse_spec

    credential = services.provider_credential_set(tenant=tenant, provider="Google-GenAI", secret=SECRET)

    assert credential.provider == parse_spec("google-genai:gemini-2.5-flash")[0] == "google_genai"
    assert services.provider_credential_secret(tenant=tenant, provider=parse_spec("google_genai:gemini")[0]) == SECRET
