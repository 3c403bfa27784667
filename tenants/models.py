"""Tenants, their hashed API keys and the staff bound to one tenant.

A tenant is a company sharing the deployment; every tenant-owned row elsewhere carries it. The
tenant of a request comes from its API key and nothing else.
"""

import re
from collections.abc import Callable
from typing import Any

import structlog
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from rest_framework_api_key.models import AbstractAPIKey, BaseAPIKeyManager

from core.exceptions import Unstorable
from core.jsonb import JsonbEncoder
from core.storable import storable_json
from tenants.managers import TenantManager, UnscopedManager

logger = structlog.get_logger(__name__)

# Settings whose deployment value may name code to import ("package.module:factory"). That form is
# the deployment's own configuration: a tenant chooses among the models the deployment offers, by
# name. Its override never names code; one stored before this rule is ignored (``Tenant.setting``).
CODE_NAMING_SETTINGS = ("MEMORY_EMBEDDING_MODEL", "MEMORY_SUMMARY_MODEL")
MODEL_NAME = re.compile(r"^[\w.:/@+-]{1,200}$")

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{0,62}$",
    "A tenant slug is 1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit.",
)


class Tenant(models.Model):
    slug = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    # Overrides of the MEMORY_* settings for this tenant only, e.g. {"MEMORY_HISTORY_LIMIT": 20}.
    settings = models.JSONField(default=dict, blank=True, encoder=JsonbEncoder)  # floats stay floats (core.jsonb)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        try:
            validate_setting_overrides(self.settings)
        except ValidationError as error:
            raise ValidationError({"settings": error.messages}) from error

    def setting(self, name: str) -> Any:
        """The tenant's value of a MEMORY_* setting: its override, or the deployment's default. A stored
        override that names code (``CODE_NAMING_SETTINGS``) is never used: the default stands in."""
        if name in self.settings:
            value = self.settings[name]
            refusal = tenant_choice_refusal(name, value) if name in CODE_NAMING_SETTINGS else None
            if refusal is None:
                return value
            logger.warning("tenant_setting_ignored", tenant=self.slug, setting=name, reason=refusal)
        return getattr(settings, name)


PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")


def provider_name(value: str) -> str:
    """A chat model provider's name as ``init_chat_model`` spells it (``Google-GenAI`` is
    ``google_genai``): the one spelling of MEMORY_CHAT_MODEL's provider and of its credentials.
    ValueError for anything else."""
    name = value.strip().lower().replace("-", "_")
    if not PROVIDER_NAME.match(name):
        raise ValueError(
            f"{value!r} is not a provider name: a lowercase name of letters, digits, '-' or '_', as in "
            "MEMORY_CHAT_MODEL (e.g. openai)."
        )
    return name


class ProviderCredential(models.Model):
    """A tenant's API key for one chat model provider (the chat endpoint's ``MEMORY_CHAT_MODEL``),
    stored encrypted (``tenants.secrets``). Neither the API nor the admin ever shows it: the admin
    shows its ``hint``, the last four characters."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="credentials", db_index=False)
    provider = models.CharField(max_length=50, help_text="The provider of MEMORY_CHAT_MODEL, e.g. openai.")
    encrypted_secret = models.TextField(editable=False)
    hint = models.CharField(max_length=8, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "tenant_provider_credentials"
        constraints = [models.UniqueConstraint(fields=["tenant", "provider"], name="provider_credential_unique")]

    def __str__(self) -> str:
        return f"{self.provider} {self.hint}"

    def __repr__(self) -> str:  # never the secret, not even encrypted
        return f"<ProviderCredential {self.tenant_id}/{self.provider} {self.hint}>"

    def set_secret(self, secret: str) -> None:
        from tenants import secrets

        self.encrypted_secret = secrets.encrypt(secret)
        self.hint = secrets.hint(secret)

    def secret(self) -> str:
        from tenants import secrets

        return secrets.decrypt(self.encrypted_secret)


# Settings that are a share of something, between 0 and 1.
SHARE_SETTINGS = (
    "MEMORY_SEARCH_VECTOR_WEIGHT",
    "MEMORY_SEARCH_NEIGHBOUR_WEIGHT",
    "MEMORY_SEARCH_SESSION_WEIGHT",
    "MEMORY_SEARCH_SPEAKER_WEIGHT",
    "MEMORY_SEARCH_DATE_WEIGHT",
)


# The largest number a tenant may set: every reader can take it (a LIMIT, a thread's wait, a count),
# whatever the setting. A whole number fits PostgreSQL's integer; a number of seconds is decades.
MAX_OVERRIDE_INT = 2_147_483_647
MAX_OVERRIDE_NUMBER = 1e9


def validate_setting_overrides(overrides: Any) -> None:
    if not isinstance(overrides, dict):
        raise ValidationError("Tenant settings must be a JSON object of MEMORY_* names to values.")
    try:
        storable_json(overrides, field="settings")  # no Infinity, NaN, NUL or lone surrogate
    except Unstorable as error:
        raise ValidationError(error.message) from error
    allowed = set(settings.MEMORY_TENANT_OVERRIDABLE)
    for name, value in overrides.items():
        if name not in allowed:
            raise ValidationError(f"{name} is not a setting a tenant may override; allowed: {', '.join(sorted(allowed))}.")
        default = getattr(settings, name)
        if isinstance(default, str):
            if not isinstance(value, str):
                raise ValidationError(f"{name} must be a string like its default ({default!r}).")
            _validate_string_setting(name, value)
            continue
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValidationError(f"{name} must be true or false like its default ({str(default).lower()}).")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValidationError(f"{name} must be a non-negative number like its default ({default}).")
        if isinstance(default, int) and not isinstance(value, int):
            raise ValidationError(f"{name} must be a whole number like its default ({default}).")
        bound = MAX_OVERRIDE_INT if isinstance(default, int) else MAX_OVERRIDE_NUMBER
        if value > bound:
            raise ValidationError(f"{name} is at most {bound:,.0f} for a tenant (its default: {default}).")
        if name in SHARE_SETTINGS and value > 1:
            raise ValidationError(f"{name} is a share: between 0 and 1, like its default ({default}).")


# What a tenant may choose for a setting that names what the deployment offers (an embedding model, a
# summary or chat model, a base URL) is decided by the app that reads the setting: it registers a check
# in its ``AppConfig.ready`` (``setting_check_register``), answering why a value is refused (None: it
# is taken). Nothing is imported to decide: the value is compared with the names the deployment offers.
SETTING_CHECKS: dict[str, Callable[[str], str | None]] = {}


def setting_check_register(name: str, check: Callable[[str], str | None]) -> None:
    SETTING_CHECKS[name] = check


def tenant_choice_refusal(name: str, value: Any) -> str | None:
    """Why a tenant may not choose ``value`` for ``name`` (None: it may), as the check its app
    registered says. A setting of ``CODE_NAMING_SETTINGS`` no installed app checks takes no value."""
    if not isinstance(value, str):
        return f"{name} must be a string."
    if not value:
        return None
    check = SETTING_CHECKS.get(name)
    if check is None:
        return (
            f"{name}={value!r}: no installed app offers a choice for it; leave it ''." if name in CODE_NAMING_SETTINGS else None
        )
    return check(value)


def _validate_string_setting(name: str, value: str) -> None:
    if name in CODE_NAMING_SETTINGS or name in SETTING_CHECKS:
        refusal = tenant_choice_refusal(name, value)
        if refusal:
            raise ValidationError(refusal)
    if name == "MEMORY_SEARCH_MODE" and value not in ("hybrid", "semantic", "keyword"):
        raise ValidationError(f"MEMORY_SEARCH_MODE must be hybrid, semantic or keyword, not {value!r}.")


class TenantApiKeyManager(BaseAPIKeyManager):
    def get_usable_keys(self) -> models.QuerySet:
        return super().get_usable_keys().filter(tenant__active=True)


class TenantApiKey(AbstractAPIKey):
    """An API key bound to one tenant; stored hashed (SHA-512), shown once at creation."""

    objects = TenantApiKeyManager()

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"


class TenantStaff(models.Model):
    """Binds a staff user to the one tenant whose data they may see in the admin."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant_staff")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="staff")

    class Meta:
        verbose_name = "tenant staff member"

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"


class TenantUsage(models.Model):
    """A tenant's usage of one UTC day (``tenants.usage``). The event counts (searches, chat runs,
    model tokens) grow as the events happen, one upsert each; the messages stored that day and the
    storage at its end are measured from the rows once the day is over (``rolled_up_at``)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()  # UTC
    messages = models.PositiveBigIntegerField(default=0)
    searches = models.PositiveBigIntegerField(default=0)
    chat_runs = models.PositiveBigIntegerField(default=0)
    model_tokens = models.PositiveBigIntegerField(default=0)
    storage_bytes = models.PositiveBigIntegerField(default=0)
    # When the day's messages and storage were measured from the rows (None: not yet, or today).
    rolled_up_at = models.DateTimeField(null=True, blank=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "tenant_usage"
        verbose_name_plural = "tenant usage"
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="tenant_usage_per_day")]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.day}"
