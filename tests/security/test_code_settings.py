"""Settings that name code to import (``package.module:factory``) are the deployment's alone.

As a tenant's operator (admin), through the services the API and commands use, or through a stored
override that escaped both: ``MEMORY_EMBEDDING_MODEL`` and ``MEMORY_SUMMARY_MODEL`` of a tenant
name one of the models the deployment offers, never code, and such a stored value is never imported.
"""

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from summaries import services as summary_services
from summaries.summarizer import RULE_BASED
from tenants import services as tenant_services
from tenants.models import Tenant
from tests.summaries.conftest import pairs, store

CODE_NAMING = ("MEMORY_EMBEDDING_MODEL", "MEMORY_SUMMARY_MODEL")
TRIPWIRE = "tests.security.test_code_settings:tripwire"
CODE_VALUES = ("email.utils:localtime", TRIPWIRE, "os:system", "builtins:exec")
imported: list[dict[str, Any]] = []


def tripwire(**arguments: Any) -> None:
    """What a stored override names: if anything calls it, the override was imported and run."""
    imported.append(arguments)


@pytest.fixture(autouse=True)
def no_calls() -> None:
    imported.clear()


def store_unchecked(tenant: Tenant, **overrides: Any) -> Tenant:
    """Overrides written as an older release or a database edit would have: past the validation."""
    Tenant.objects.filter(pk=tenant.pk).update(settings={**tenant.settings, **overrides})
    tenant.refresh_from_db()
    return tenant


@pytest.mark.parametrize("value", CODE_VALUES)
@pytest.mark.parametrize("name", CODE_NAMING)
def test_the_service_refuses_a_tenant_override_that_names_code(tenant: Tenant, name: str, value: str) -> None:
    with pytest.raises(ValidationError, match="deployment's own configuration"):
        tenant_services.tenant_update(tenant=tenant, settings={name: value})

    tenant.refresh_from_db()
    assert name not in tenant.settings
    assert imported == []


@pytest.mark.parametrize("name", CODE_NAMING)
def test_the_admin_refuses_an_operator_override_that_names_code(operator_client: Any, tenant: Tenant, name: str) -> None:
    response = operator_client.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/", {"name": "acme", "settings": f'{{"{name}": "email.utils:localtime"}}'}
    )

    assert response.status_code == 200  # the form again, with the error
    errors = str(response.context["adminform"].form.errors["settings"])
    assert name in errors
    assert "package.module:factory" in errors
    tenant.refresh_from_db()
    assert name not in tenant.settings


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORY_EMBEDDING_MODEL", "all-MiniLM-L6-v2-plain"),
        ("MEMORY_EMBEDDING_MODEL", ""),
        ("MEMORY_SUMMARY_MODEL", "openai:gpt-4o-mini"),
        ("MEMORY_SUMMARY_MODEL", ""),
    ],
)
def test_a_tenant_chooses_among_the_models_the_deployment_offers(tenant: Tenant, name: str, value: str) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={name: value})

    tenant.refresh_from_db()
    assert tenant.setting(name) == value


@pytest.mark.parametrize("name", CODE_NAMING)
def test_a_stored_override_that_names_code_is_ignored_for_the_deployments_value(tenant: Tenant, name: str, settings: Any) -> None:
    setattr(settings, name, "")
    store_unchecked(tenant, **{name: TRIPWIRE})

    assert tenant.setting(name) == ""


def test_a_stored_summary_model_that_names_code_is_never_imported(tenant: Tenant, settings: Any) -> None:
    settings.MEMORY_SUMMARY_MODEL = ""
    store_unchecked(tenant, MEMORY_SUMMARY_MODEL=TRIPWIRE)
    store(tenant, "c1", pairs(1, 10))

    summary = summary_services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summary.model == RULE_BASED
    assert imported == []


def test_a_stored_embedding_model_that_names_code_is_never_imported(tenant: Tenant, settings: Any) -> None:
    from search import services as search_services

    settings.MEMORY_EMBEDDING_MODEL = ""
    store_unchecked(tenant, MEMORY_EMBEDDING_MODEL=TRIPWIRE)
    store(tenant, "c1", pairs(1, 2))

    assert search_services.conversation_embed(tenant=tenant, conversation_id="c1") == 0
    assert imported == []


def test_the_reembed_command_cannot_make_code_a_tenants_model(tenant: Tenant) -> None:
    with pytest.raises(CommandError, match="deployment's own configuration"):
        call_command("reembed", "--tenant", tenant.slug, "--model", TRIPWIRE)

    tenant.refresh_from_db()
    assert "MEMORY_EMBEDDING_MODEL" not in tenant.settings
    assert imported == []
