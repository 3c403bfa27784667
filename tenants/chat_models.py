"""A tenant's chat model (its model, server, temperature and answer length), built by LangChain.

The tenant's settings (``Tenant.settings`` overrides, else the deployment's) choose it:

* ``MEMORY_CHAT_MODEL``: ``"provider:model"`` as LangChain's ``init_chat_model`` reads it
  (``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1:8b``), or a provider
  the deployment registered in ``MEMORY_CHAT_PROVIDERS`` (name -> ``"dotted.module:factory"``).
  Empty: no model, and the chat endpoint answers 503 naming the setting.
* ``MEMORY_CHAT_BASE_URL``: the server to call instead of the provider's own, e.g. any
  OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a gateway) with ``openai:<its model>``.
  A tenant's own base URL passes the egress policy (``tenants.egress``) when it is saved and again
  on every connection, and works with the ``openai`` provider, whose HTTP client the policy guards.
* ``MEMORY_CHAT_TEMPERATURE``, ``MEMORY_CHAT_MAX_TOKENS``: defaults a request may override (the
  request's ``max_tokens`` up to the setting); ``MEMORY_CHAT_TIMEOUT``, ``MEMORY_CHAT_MAX_RETRIES``:
  the client's bounds.
* The API key is the tenant's ``ProviderCredential`` for the provider, decrypted here and handed to
  the model only. Credentials never cross the tenant boundary: a server the tenant chose (its own
  ``MEMORY_CHAT_BASE_URL``) is called with the tenant's credential and nothing else, and without one
  the chat is refused (503 ``provider_credential_missing``). Only on the servers the deployment
  configured (the provider's own, or the deployment's ``MEMORY_CHAT_BASE_URL``) may the integration
  fall back to the deployment's environment variable (``OPENAI_API_KEY``...); with the deployment's
  base URL and neither, a placeholder, which local servers ignore.

A request may name another model of the same provider (``model``); it cannot change the provider,
the server or the credentials.
"""

import importlib
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError
from langchain_core.language_models import BaseChatModel

from core.exceptions import ServiceUnavailable
from tenants import egress
from tenants.models import Tenant, provider_name
from tenants.secrets import SecretUnreadable
from tenants.services import provider_credential_secret

logger = structlog.get_logger(__name__)

MODEL_NAME = re.compile(r"^[\w.:/@+-]{1,200}$")
# What a server that ignores the key gets when none is configured (the OpenAI client refuses none).
PLACEHOLDER_API_KEY = "unused"
# Each provider's environment variable for its key, where the integration reads one.
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
}
# The providers whose HTTP client the egress policy guards: the only ones a tenant's own base URL serves.
TENANT_URL_PROVIDERS = frozenset({"openai"})


class ChatModelNotConfigured(ServiceUnavailable):
    def __init__(self, message: str, *, code: str = "chat_model_not_configured") -> None:
        super().__init__(message, retry_after=60, code=code)


class ChatModelUnavailable(ServiceUnavailable):
    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=60, code="chat_model_unavailable")


@dataclass(frozen=True)
class ChatSettings:
    provider: str
    model: str
    base_url: str
    temperature: float
    max_tokens: int
    timeout: float
    max_retries: int
    # True when the base URL is the tenant's own choice (its override), not the deployment's.
    tenant_base_url: bool = False

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"


def init_chat_model_providers() -> frozenset[str]:
    """The providers ``init_chat_model`` knows (its integration may still need installing)."""
    from langchain.chat_models import base

    return frozenset(getattr(base, "_BUILTIN_PROVIDERS", ()))


def parse_spec(spec: str) -> tuple[str, str]:
    """(provider, model) of ``"provider:model"``, or ValueError saying what a spec looks like."""
    provider, _, model = spec.strip().partition(":")
    if not provider.strip() or not model.strip():
        raise ValueError(
            f"MEMORY_CHAT_MODEL={spec!r} names no model: use 'provider:model', e.g. 'openai:gpt-4o-mini' "
            "(with MEMORY_CHAT_BASE_URL for an OpenAI-compatible server)."
        )
    provider = provider_name(provider)
    known = set(settings.MEMORY_CHAT_PROVIDERS) | init_chat_model_providers()
    if provider not in known:
        raise ValueError(
            f"MEMORY_CHAT_MODEL={spec!r}: unknown provider {provider!r}; the providers are {', '.join(sorted(known))}."
        )
    if not MODEL_NAME.match(model.strip()):
        raise ValueError(f"MEMORY_CHAT_MODEL={spec!r}: a model name is 1 to 200 letters, digits and . : / @ + - _")
    return provider, model.strip()


def model_name_check(name: str) -> str:
    """A model's name alone (``MEMORY_EXTRACTION_MODEL``: another model of the chat model's provider)."""
    if not MODEL_NAME.match(name.strip()):
        raise ValueError(f"{name!r} is not a model name: 1 to 200 letters, digits and . : / @ + - _ (e.g. gpt-4o-mini).")
    return name.strip()


def validate_base_url(url: str) -> str:
    """A tenant's base URL: http(s), to a host the egress policy lets a tenant reach (ValueError)."""
    return egress.url_check(url, field="MEMORY_CHAT_BASE_URL")


def chat_settings(
    tenant: Tenant, *, model: str | None = None, temperature: float | None = None, max_tokens: int | None = None
) -> ChatSettings:
    """The tenant's model settings with a request's choices; 503 when no model is configured."""
    spec = str(tenant.setting("MEMORY_CHAT_MODEL") or "").strip()
    if not spec:
        raise ChatModelNotConfigured(
            f"No chat model is configured for tenant {tenant.slug}: set MEMORY_CHAT_MODEL (e.g. 'openai:gpt-4o-mini') "
            "in the deployment's environment or in the tenant's settings."
        )
    try:
        provider, configured_model = parse_spec(spec)
    except ValueError as error:
        raise ChatModelNotConfigured(str(error)) from error
    ceiling = int(tenant.setting("MEMORY_CHAT_MAX_TOKENS"))
    base_url = str(tenant.setting("MEMORY_CHAT_BASE_URL") or "").strip()
    return ChatSettings(
        provider=provider,
        model=model or configured_model,
        base_url=base_url,
        tenant_base_url=bool(base_url) and "MEMORY_CHAT_BASE_URL" in tenant.settings,
        temperature=float(tenant.setting("MEMORY_CHAT_TEMPERATURE") if temperature is None else temperature),
        max_tokens=min(max_tokens, ceiling) if max_tokens else ceiling,
        timeout=float(tenant.setting("MEMORY_CHAT_TIMEOUT")),
        max_retries=int(tenant.setting("MEMORY_CHAT_MAX_RETRIES")),
    )


def chat_model(tenant: Tenant, chosen: ChatSettings) -> BaseChatModel:
    """The LangChain chat model ``chosen`` names, with the tenant's credential; 503 when it cannot be built."""
    api_key = _credential(tenant, chosen)
    problem = _setup_problem(tenant, chosen, api_key)
    if problem is not None:
        raise problem
    arguments: dict[str, Any] = {
        "temperature": chosen.temperature,
        "max_tokens": chosen.max_tokens,
        "timeout": chosen.timeout,
        "max_retries": chosen.max_retries,
    }
    if chosen.tenant_base_url:
        http_client, http_async_client = egress.clients(field="MEMORY_CHAT_BASE_URL")
        arguments |= {"base_url": chosen.base_url, "http_client": http_client, "http_async_client": http_async_client}
    elif chosen.base_url:
        arguments["base_url"] = chosen.base_url
        if api_key is None and not os.environ.get(KEY_VARIABLES.get(chosen.provider, ""), ""):
            api_key = PLACEHOLDER_API_KEY
    if api_key is not None:
        arguments["api_key"] = api_key
    try:
        if chosen.provider in settings.MEMORY_CHAT_PROVIDERS:
            model = _factory(chosen.provider)(model=chosen.model, **arguments)
        else:
            from langchain.chat_models import init_chat_model

            model = init_chat_model(chosen.model, model_provider=chosen.provider, **_provider_arguments(chosen, arguments))
    except ChatModelUnavailable:
        raise
    except ImportError as error:
        raise ChatModelUnavailable(
            f"The provider {chosen.provider} of MEMORY_CHAT_MODEL needs its LangChain integration, which is not "
            f"installed ({error}); pip install langchain-{chosen.provider.replace('_', '-')}."
        ) from error
    except Exception as error:  # the integration refused its arguments: most often a missing API key
        variable = KEY_VARIABLES.get(chosen.provider)
        hint = f" or {variable}" if variable else ""
        raise ChatModelUnavailable(
            f"The {chosen.spec} model cannot be set up: {error}. Store the tenant's credential (manage.py "
            f"provider_credential --tenant {tenant.slug} --provider {chosen.provider}){hint}."
        ) from error
    if not isinstance(model, BaseChatModel):
        raise ChatModelUnavailable(f"The provider {chosen.provider} gave a {type(model).__name__}, not a LangChain chat model.")
    return model


def setup_problem(tenant: Tenant, chosen: ChatSettings) -> ChatModelNotConfigured | None:
    """Why ``chosen`` cannot be set up for the tenant as configured, found without building or calling
    it (a status can ask on every read); None when nothing configured stands in its way. A credential
    that cannot be read now (Redis and PostgreSQL down, a key rotated) is no configuration problem:
    the model is tried, and fails as a call would."""
    try:
        api_key = _credential(tenant, chosen)
    except ChatModelUnavailable:
        return None
    return _setup_problem(tenant, chosen, api_key)


def _credential(tenant: Tenant, chosen: ChatSettings) -> str | None:
    try:
        return provider_credential_secret(tenant=tenant, provider=chosen.provider)
    except SecretUnreadable as error:
        raise ChatModelUnavailable(f"The {chosen.provider} credential of tenant {tenant.slug} is unreadable: {error}") from error
    except DatabaseError as error:
        raise ChatModelUnavailable(
            f"The {chosen.provider} credential of tenant {tenant.slug} cannot be read: neither the cache nor PostgreSQL answers."
        ) from error


def _setup_problem(tenant: Tenant, chosen: ChatSettings, api_key: str | None) -> ChatModelNotConfigured | None:
    """The configuration that keeps ``chosen`` from being built with ``api_key`` (see ``setup_problem``).
    A server the tenant chose is called with the tenant's own credential only, never the deployment's."""
    store = f"manage.py provider_credential --tenant {tenant.slug} --provider {chosen.provider}, or the admin"
    if chosen.tenant_base_url and chosen.provider not in TENANT_URL_PROVIDERS:
        return ChatModelNotConfigured(
            f"Tenant {tenant.slug} sets its own MEMORY_CHAT_BASE_URL, which serves the providers "
            f"{', '.join(sorted(TENANT_URL_PROVIDERS))} only (any OpenAI-compatible server), not {chosen.provider}."
        )
    if chosen.tenant_base_url and api_key is None:
        return ChatModelNotConfigured(
            f"Tenant {tenant.slug} sets its own MEMORY_CHAT_BASE_URL but has no {chosen.provider} credential: a "
            "server a tenant chooses is called with that tenant's own credential only, never the deployment's. "
            f"Store one ({store}); for a server that takes no key, any value.",
            code="provider_credential_missing",
        )
    if chosen.provider in settings.MEMORY_CHAT_PROVIDERS:
        try:
            _factory(chosen.provider)
        except ChatModelUnavailable as error:
            return ChatModelNotConfigured(error.message)
        return None
    integration = f"langchain_{chosen.provider}"
    if importlib.util.find_spec(integration) is None:
        return ChatModelNotConfigured(
            f"The provider {chosen.provider} of MEMORY_CHAT_MODEL needs its LangChain integration, which is not installed: "
            f"pip install {integration.replace('_', '-')}."
        )
    variable = KEY_VARIABLES.get(chosen.provider)
    if variable and not chosen.base_url and api_key is None and not os.environ.get(variable, ""):
        return ChatModelNotConfigured(
            f"The {chosen.spec} model has no API key: store the tenant's {chosen.provider} credential ({store}), or set "
            f"{variable} in the deployment's environment.",
            code="provider_credential_missing",
        )
    return None


def _provider_arguments(chosen: ChatSettings, arguments: dict[str, Any]) -> dict[str, Any]:
    if chosen.provider == "ollama":  # its names for the output bound and the client's timeout
        ollama = {
            key: value for key, value in arguments.items() if key not in ("max_tokens", "timeout", "max_retries", "api_key")
        }
        return ollama | {"num_predict": chosen.max_tokens, "client_kwargs": {"timeout": chosen.timeout}}
    return arguments


def _factory(provider: str) -> Any:
    target = settings.MEMORY_CHAT_PROVIDERS[provider]
    module_name, _, attribute = target.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute, None)
    except ImportError as error:
        raise ChatModelUnavailable(f"MEMORY_CHAT_PROVIDERS[{provider!r}]={target!r} cannot be imported: {error}") from error
    if not callable(factory):
        raise ChatModelUnavailable(f"MEMORY_CHAT_PROVIDERS[{provider!r}]={target!r} names no factory.")
    return factory


def tenant_choice_refusal(parse: Callable[[str], Any]) -> Callable[[str], str | None]:
    """A check for ``tenants.models.setting_check_register``: the error ``parse`` raises for a value, or None."""

    def refusal(value: str) -> str | None:
        try:
            parse(value)
        except ValueError as error:
            return str(error)
        return None

    return refusal
