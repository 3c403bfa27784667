"""A tenant's model server URL (``MEMORY_CHAT_BASE_URL``) and the deployment's network and secrets.

As an attacker holding one tenant's API key and its operator account: the URL cannot lead to
loopback, private, link-local, metadata or otherwise internal addresses, in any spelling, neither
when it is saved (service, admin) nor when the connection is made (a name that resolves elsewhere
by then); the deployment's model key never goes to a server the tenant chose; a failing server's
own words never come back in the answer. ``MEMORY_EGRESS_ALLOWED_NETWORKS`` lets an operator's
private server through, and nothing more.
"""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.core.exceptions import ValidationError

from tenants import egress
from tenants import services as tenant_services
from tenants.models import Tenant
from tests.chat.openai_server import OpenAICompatibleServer
from tests.conftest import client_for

FIELD = "MEMORY_CHAT_BASE_URL"
CHAT = "/api/v1/conversations/{}/chat/"
DEPLOYMENT_KEY = "sk-deployment-0123456789SECRET"
TENANT_KEY = "sk-tenant-own-0123456789abcd"
PUBLIC = "93.184.216.34"

# Every spelling of an address a tenant's URL may not reach (the host part of the URL).
REFUSED_HOSTS = [
    "169.254.169.254",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "metadata.google.internal",
    "metadata.google.internal.",
    "METADATA.GOOGLE.INTERNAL",
    "168.63.129.16",
    "[fd00:ec2::254]",
    "100.100.100.200",
    "10.0.0.5",
    "172.16.3.4",
    "192.168.1.1",
    "100.64.0.1",
    "localhost:6379",
    "localhost.",
    "api.localhost",
    "127.0.0.1",
    "127.1",
    "0x7f000001",
    "0x7f.0.0.1",
    "2130706433",
    "0177.0.0.1",
    "017700000001",
    "[::1]",
    "[::]",
    "0.0.0.0",  # noqa: S104 - a host a tenant names, not one this binds
    "0",
    "[fd00::1]",
    "[fe80::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:10.0.0.5]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:7f00:1::]",
    "224.0.0.1",
    "[ff02::1]",
    "240.0.0.1",
    "255.255.255.255",
    "resolves-to-loopback.example",
    "resolves-to-metadata.example",
    "one-private-answer.example",
]
# Spellings the HTTP client refuses to parse as a URL at all: it cannot connect to them either.
UNPARSED_BY_THE_CLIENT = {"0177.0.0.1"}
ALLOWED_URLS = ["https://api.example.com/v1", "http://8.8.8.8/v1", "https://[2606:4700:4700::1111]/v1"]


class FakeDNS:
    """The resolver the egress policy asks, playing DNS: each name answers its list of answers in
    turn, the last one for ever after; a name it does not know does not resolve."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {
            "api.example.com": [[PUBLIC]],
            "resolves-to-loopback.example": [["127.0.0.1"]],
            "resolves-to-metadata.example": [["169.254.169.254"]],
            "one-private-answer.example": [[PUBLIC, "10.0.0.7"]],
        }
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        turns = self.answers.get(host.rstrip(".").lower())
        if not turns:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return turns.pop(0) if len(turns) > 1 else turns[0]


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    fake = FakeDNS()
    monkeypatch.setattr(egress, "resolve", fake)
    return fake


@pytest.fixture
def model_server() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer().start()
    yield server
    server.stop()


@pytest.fixture
def deployment_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The deployment's own OpenAI key, in its environment as the integration reads it."""
    monkeypatch.setenv("OPENAI_API_KEY", DEPLOYMENT_KEY)
    return DEPLOYMENT_KEY


def configure(tenant: Tenant, **overrides: Any) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, **overrides})


def store_unchecked(tenant: Tenant, **overrides: Any) -> None:
    """Overrides written as an older release or a database edit would have: past the validation."""
    Tenant.objects.filter(pk=tenant.pk).update(settings={**tenant.settings, **overrides})
    tenant.refresh_from_db()


def chat(tenant: Tenant, conversation_id: str = "c1", content: str = "Hello") -> Any:
    return client_for(tenant).post(CHAT.format(conversation_id), {"content": content}, format="json")


def authorizations(server: OpenAICompatibleServer) -> list[str | None]:
    return [request["authorization"] for request in server.requests]


# --- When the setting is saved ----------------------------------------------------------------------


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_saving_a_url_to_an_internal_address_is_refused_naming_the_setting(tenant: Tenant, dns: FakeDNS, host: str) -> None:
    with pytest.raises(ValidationError, match=FIELD):
        configure(tenant, MEMORY_CHAT_MODEL="openai:any", MEMORY_CHAT_BASE_URL=f"http://{host}/v1")

    tenant.refresh_from_db()
    assert FIELD not in tenant.settings


@pytest.mark.parametrize("url", ALLOWED_URLS)
def test_a_url_to_a_public_address_is_saved(tenant: Tenant, dns: FakeDNS, url: str) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="openai:any", MEMORY_CHAT_BASE_URL=url)

    tenant.refresh_from_db()
    assert tenant.settings[FIELD] == url


def test_a_name_that_does_not_resolve_is_refused_when_saved(tenant: Tenant, dns: FakeDNS) -> None:
    with pytest.raises(ValidationError, match="does not resolve"):
        configure(tenant, MEMORY_CHAT_BASE_URL="https://no-such-host.example/v1")


@pytest.mark.parametrize("url", ["ftp://example.com", "file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "http:///v1"])
def test_a_url_that_is_not_http_is_refused(tenant: Tenant, url: str) -> None:
    with pytest.raises(ValidationError, match=f"{FIELD}=.*not an http"):
        configure(tenant, MEMORY_CHAT_BASE_URL=url)


@pytest.mark.parametrize(
    "host", ["169.254.169.254", "[::ffff:169.254.169.254]", "metadata.google.internal", "0x7f000001", "10.0.0.5"]
)
def test_the_admin_refuses_an_internal_url_with_a_form_error_naming_the_setting(
    operator_client: Any, tenant: Tenant, dns: FakeDNS, host: str
) -> None:
    settings = f'{{"MEMORY_CHAT_MODEL": "openai:any", "MEMORY_CHAT_BASE_URL": "http://{host}/latest/meta-data/"}}'
    response = operator_client.post(f"/admin/tenants/tenant/{tenant.pk}/change/", {"name": "acme", "settings": settings})

    assert response.status_code == 200  # the form again, with the error
    assert FIELD in str(response.context["adminform"].form.errors["settings"])
    tenant.refresh_from_db()
    assert FIELD not in tenant.settings


def test_the_allowlist_lets_an_operators_private_network_and_names_through(tenant: Tenant, dns: FakeDNS, settings: Any) -> None:
    dns.answers["vllm.internal"] = [["10.20.0.8"]]
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["10.20.0.0/16", "vllm.internal."]

    configure(tenant, MEMORY_CHAT_BASE_URL="http://10.20.3.4:8000/v1")
    configure(tenant, MEMORY_CHAT_BASE_URL="http://VLLM.internal:8000/v1")
    with pytest.raises(ValidationError, match="private"):
        configure(tenant, MEMORY_CHAT_BASE_URL="http://10.21.0.1:8000/v1")
    with pytest.raises(ValidationError, match="metadata"):
        configure(tenant, MEMORY_CHAT_BASE_URL="http://169.254.169.254/v1")


def test_the_allowlist_is_read_from_the_environment_and_empty_unless_set() -> None:
    probe = (
        "import django; django.setup(); from tenants import egress; "
        "print(egress.address_refusal(egress.ip_literal('10.20.3.4'), scheme='http', port=8000), "
        "[entry.name for entry in egress.allowlist() if entry.name])"
    )
    environment = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
        MEMORY_EGRESS_ALLOWED_NETWORKS="10.20.0.0/16,vllm.internal",
    )
    finished = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=60)

    assert finished.stdout.strip() == "None ['vllm.internal']", finished.stderr
    assert egress.allowlist() == ()  # nothing unless the operator says so


def test_an_entry_naming_a_port_lets_through_that_server_and_not_the_others_on_its_address(
    tenant: Tenant, dns: FakeDNS, settings: Any
) -> None:
    """Allowlisting the local model server must not open the deployment's Redis, PostgreSQL, broker
    or the service itself on the same address to every tenant."""
    dns.answers["models.internal"] = [["10.0.0.7"]]
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["http://127.0.0.1:11434", "[::1]:8000", "https://models.internal:8443/"]

    configure(tenant, MEMORY_CHAT_BASE_URL="http://127.0.0.1:11434/v1")
    configure(tenant, MEMORY_CHAT_BASE_URL="http://[::1]:8000/v1")
    configure(tenant, MEMORY_CHAT_BASE_URL="https://[::1]:8000/v1")  # no scheme named: either
    configure(tenant, MEMORY_CHAT_BASE_URL="https://models.internal:8443/v1")
    for refused in (
        "http://127.0.0.1:6379/v1",  # Redis
        "http://127.0.0.1:5432/v1",  # PostgreSQL
        "http://127.0.0.1:5672/v1",  # RabbitMQ
        "http://127.0.0.1:8000/v1",  # the service itself
        "https://127.0.0.1:11434/v1",  # the scheme the entry did not name
        "http://127.0.0.1/v1",  # the default port is a port too
        "http://[::1]:6379/v1",
        "http://models.internal:8443/v1",
        "https://models.internal/v1",
    ):
        with pytest.raises(ValidationError, match="loopback|private"):
            configure(tenant, MEMORY_CHAT_BASE_URL=refused)


def test_an_entry_naming_a_port_is_kept_to_at_connection_time(dns: FakeDNS, settings: Any) -> None:
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["http://127.0.0.1:11434"]
    dns.answers["rebinding.example"] = [["127.0.0.1"]]

    with pytest.raises(egress.EgressRefused, match="127.0.0.1, a loopback address"):
        guarded_get("http://rebinding.example:6379/")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("127.0.0.1:0", "port must be a number from 1 to 65535"),
        ("127.0.0.1:70000", "port must be a number from 1 to 65535"),
        ("127.0.0.1:http", "port must be a number"),
        ("ftp://127.0.0.1:21", "scheme must be http or https"),
        ("http://127.0.0.1:11434/v1", "no path"),
        ("10.20.0.0/16:8000", "network without a port"),
        ("models internal", "neither an address nor a host name"),
        ("[::1]8000", "only ':port' may follow"),
        ("user@host", "is not a host"),
    ],
)
def test_a_malformed_allowlist_entry_is_refused_naming_it(entry: str, problem: str) -> None:
    with pytest.raises(egress.AllowlistInvalid, match=problem) as refused:
        egress.allowlist_entry(entry)
    assert repr(entry) in str(refused.value)


def test_a_malformed_allowlist_entry_stops_the_process_at_start() -> None:
    environment = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="memoryproject.settings.test",
        MEMORY_EGRESS_ALLOWED_NETWORKS="10.0.0.0/8,127.0.0.1:99999",
    )
    finished = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode != 0
    assert "started" not in finished.stdout
    assert "ImproperlyConfigured: MEMORY_EGRESS_ALLOWED_NETWORKS: '127.0.0.1:99999': the port must be" in finished.stderr


# --- When the connection is made ---------------------------------------------------------------------


def guarded_get(url: str) -> httpx2.Response:
    http_client, _ = egress.clients(field=FIELD)
    with http_client:
        return http_client.get(url, timeout=2)


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_the_connection_refuses_every_spelling_of_an_internal_address(dns: FakeDNS, host: str) -> None:
    if host in UNPARSED_BY_THE_CLIENT:
        with pytest.raises(httpx2.InvalidURL):
            guarded_get(f"http://{host}/v1/models")
        return
    with pytest.raises(egress.EgressRefused, match=FIELD):
        guarded_get(f"http://{host}/v1/models")


def test_a_name_that_resolves_elsewhere_at_connection_time_is_refused(dns: FakeDNS) -> None:
    dns.answers["rebinding.example"] = [[PUBLIC], ["127.0.0.1"]]
    egress.url_check("http://rebinding.example/v1", field=FIELD)  # public when saved

    with pytest.raises(egress.EgressRefused, match="127.0.0.1, a loopback address"):
        guarded_get("http://rebinding.example/v1/models")


def test_the_connection_goes_to_the_address_checked_with_the_hosts_name_in_the_request(
    dns: FakeDNS, settings: Any, model_server: OpenAICompatibleServer
) -> None:
    """One lookup, one check, and the connection to that very address: the client never resolves the
    name again (this name exists in no real DNS, so any second lookup would fail)."""
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    port = model_server.base_url.rsplit(":", 1)[1].split("/")[0]
    dns.answers["models.private.example"] = [["127.0.0.1"], ["10.0.0.9"]]

    http_client, _ = egress.clients(field=FIELD)
    with http_client:
        answer = http_client.post(
            f"http://models.private.example:{port}/v1/chat/completions", json={"model": "stub-echo", "messages": []}
        )

    assert answer.status_code == 200
    assert dns.asked == ["models.private.example"]
    assert [request["host"] for request in model_server.requests] == [f"models.private.example:{port}"]


def test_a_chat_whose_server_now_resolves_to_loopback_is_a_502_and_reaches_nothing(
    tenant: Tenant, dns: FakeDNS, settings: Any, model_server: OpenAICompatibleServer
) -> None:
    port = model_server.base_url.rsplit(":", 1)[1].split("/")[0]
    dns.answers["rebinding.example"] = [[PUBLIC], ["127.0.0.1"]]
    configure(tenant, MEMORY_CHAT_MODEL="openai:stub-echo", MEMORY_CHAT_BASE_URL=f"http://rebinding.example:{port}/v1")
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=TENANT_KEY)

    response = chat(tenant)

    assert response.status_code == 502, response.content
    error = response.json()["error"]
    assert error["code"] == "egress_refused"
    assert FIELD in error["message"]
    assert model_server.requests == []


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1", "0x7f000001", "2130706433", "[::ffff:127.0.0.1]", "localhost."])
def test_a_stored_url_that_escaped_the_save_check_is_refused_at_connection(
    tenant: Tenant, dns: FakeDNS, model_server: OpenAICompatibleServer, host: str
) -> None:
    """An override stored before the policy existed points at a live server on loopback: refused."""
    port = model_server.base_url.rsplit(":", 1)[1].split("/")[0]
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=TENANT_KEY)
    store_unchecked(tenant, MEMORY_CHAT_MODEL="openai:stub-echo", MEMORY_CHAT_BASE_URL=f"http://{host}:{port}/v1")

    response = chat(tenant)

    assert response.status_code == 502, response.content
    assert response.json()["error"]["code"] == "egress_refused"
    assert model_server.requests == []


# --- Credentials never cross the boundary ---------------------------------------------------------------


@pytest.fixture
def allow_loopback(settings: Any) -> None:
    """The recording server listens on loopback, which the policy refuses: the operator allows it."""
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]


def test_a_tenants_own_server_never_gets_the_deployments_key(
    tenant: Tenant, deployment_key: str, allow_loopback: None, model_server: OpenAICompatibleServer
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="openai:stub-echo", MEMORY_CHAT_BASE_URL=model_server.base_url)

    refused = chat(tenant, "c1")

    assert refused.status_code == 503, refused.content
    error = refused.json()["error"]
    assert error["code"] == "provider_credential_missing"
    assert "no openai credential" in error["message"]
    assert model_server.requests == []

    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=TENANT_KEY)
    answered = chat(tenant, "c2")

    assert answered.status_code == 201, answered.content
    assert authorizations(model_server) == [f"Bearer {TENANT_KEY}"]
    assert not any(deployment_key in str(request) for request in model_server.requests)


def test_the_deployments_own_server_gets_the_deployments_key(
    tenant: Tenant, deployment_key: str, settings: Any, model_server: OpenAICompatibleServer
) -> None:
    """The same server configured by the deployment (its settings, not a tenant's) is the deployment's
    to trust: its key goes there, and the egress policy does not apply."""
    settings.MEMORY_CHAT_MODEL = "openai:stub-echo"
    settings.MEMORY_CHAT_BASE_URL = model_server.base_url
    store_unchecked(tenant)

    answered = chat(tenant)

    assert answered.status_code == 201, answered.content
    assert authorizations(model_server) == [f"Bearer {deployment_key}"]


def test_a_tenant_url_with_a_provider_whose_client_is_not_guarded_is_refused(
    tenant: Tenant, deployment_key: str, allow_loopback: None, model_server: OpenAICompatibleServer
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo", MEMORY_CHAT_BASE_URL=model_server.base_url)
    tenant_services.provider_credential_set(tenant=tenant, provider="fake", secret=TENANT_KEY)

    response = chat(tenant)

    assert response.status_code == 503, response.content
    assert "serves the providers openai only" in response.json()["error"]["message"]
    assert model_server.requests == []


# --- What a failing server says stays in the log -----------------------------------------------------------


def test_a_failing_servers_error_body_is_not_repeated_to_the_client(
    tenant: Tenant, allow_loopback: None, model_server: OpenAICompatibleServer
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="openai:stub-fail", MEMORY_CHAT_BASE_URL=model_server.base_url, MEMORY_CHAT_MAX_RETRIES=0)
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=TENANT_KEY)

    response = chat(tenant)

    assert response.status_code == 502, response.content
    error = response.json()["error"]
    assert error["code"] == "model_error"
    assert error["details"]["provider_status"] == 500
    assert "HTTP 500" in error["message"]
    assert "the stub model server failed" not in response.content.decode()
