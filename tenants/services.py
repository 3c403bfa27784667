"""Writes for tenants and their API keys. Every change that affects authentication forgets the
cached key records at once, so a revoked key or a deactivated tenant is refused on the next call
(a change made around these services, by a queryset update or raw SQL, is refused within
``MEMORY_AUTH_REVALIDATE`` seconds: ``tenants.authentication``).

Names, user names, e-mail addresses, passwords and secrets given to these services (by the commands,
mostly, whose arguments may carry any character) pass the door first (``core.storable``):
one holding a NUL or a lone UTF-16 surrogate raises ``Unstorable`` and nothing is written."""

from datetime import datetime
from typing import Any

import structlog
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group, Permission
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction

from core.redis_client import CacheUnavailable
from core.storable import storable_text
from tenants import secrets, throttling
from tenants.models import (
    ProviderCredential,
    Tenant,
    TenantApiKey,
    TenantStaff,
    provider_name,
)

logger = structlog.get_logger(__name__)

AUTH_CACHE_PREFIX = "auth:apikey:"
CREDENTIAL_CACHE_PREFIX = "auth:credential:"


def auth_cache_key(prefix: str) -> str:
    return f"{AUTH_CACHE_PREFIX}{prefix}"


def tenant_create(*, slug: str, name: str = "", settings: dict[str, Any] | None = None) -> Tenant:
    storable_text(slug, field="slug")
    storable_text(name, field="name")
    tenant = Tenant(slug=slug, name=name or slug, settings=settings or {})
    tenant.full_clean()
    tenant.save()
    logger.info("tenant_created", tenant=slug)
    return tenant


def tenant_update(*, tenant: Tenant, **changes: Any) -> Tenant:
    """Change a tenant; its setting overrides are validated once, by ``full_clean`` (``Tenant.clean``).
    Refused changes leave ``tenant`` as it was."""
    before = {name: getattr(tenant, name) for name in changes}
    for name, value in changes.items():
        setattr(tenant, name, value)
    try:
        tenant.full_clean()
    except ValidationError:
        for name, value in before.items():
            setattr(tenant, name, value)
        raise
    tenant.save()
    auth_cache_forget(tenant=tenant)
    return tenant


def provider_credential_set(*, tenant: Tenant, provider: str, secret: str) -> ProviderCredential:
    """Store (or replace) the tenant's API key for a chat model provider, encrypted."""
    try:
        provider = provider_name(provider)
    except ValueError as error:
        raise ValidationError(str(error)) from error
    secret = storable_text(secret, field="secret").strip()
    if not secret:
        raise ValidationError("The credential is empty; give the provider's API key.")
    credential = ProviderCredential.objects.for_tenant(tenant).filter(provider=provider).first()
    credential = credential or ProviderCredential(tenant=tenant, provider=provider)
    credential.set_secret(secret)
    credential.save()
    logger.info("provider_credential_set", tenant=tenant.slug, provider=provider, hint=credential.hint)
    return credential


def provider_credential_delete(*, tenant: Tenant, provider: str) -> bool:
    deleted, _ = ProviderCredential.objects.for_tenant(tenant).filter(provider=provider_name(provider)).delete()
    if deleted:
        logger.info("provider_credential_deleted", tenant=tenant.slug, provider=provider)
    return bool(deleted)


def provider_credential_secret(*, tenant: Tenant, provider: str) -> str | None:
    """The decrypted credential, for the one caller that hands it to the provider (``tenants.chat_models``).

    Its encrypted form is cached in Redis beside the key records (``MEMORY_AUTH_CACHE_TTL``), so a
    chat needs no PostgreSQL round trip and goes on while PostgreSQL is down; the
    secret is decrypted here only, never cached in the clear. DatabaseError when neither answers.
    """
    cache_key = credential_cache_key(tenant_id=tenant.pk, provider=provider)
    try:
        cached = cache.get(cache_key)
    except Exception as error:  # Redis down: PostgreSQL alone
        logger.warning("credential_cache_unavailable", error=str(error))
        cached = None
    if cached is None:
        credential = ProviderCredential.objects.for_tenant(tenant).filter(provider=provider).first()
        cached = {"encrypted": credential.encrypted_secret if credential is not None else None}
        try:
            cache.set(cache_key, cached, timeout=settings.MEMORY_AUTH_CACHE_TTL)
        except Exception as error:
            logger.warning("credential_cache_unavailable", error=str(error))
    return secrets.decrypt(cached["encrypted"]) if cached["encrypted"] else None


def credential_cache_key(*, tenant_id: int, provider: str) -> str:
    return f"{CREDENTIAL_CACHE_PREFIX}{tenant_id}:{provider}"


def provider_credential_forget(*, instance: ProviderCredential, **_: object) -> None:
    """After a credential is saved or deleted, however (service, admin, cascade), its cached form goes
    (connected to ``post_save`` and ``post_delete`` in ``apps``)."""
    cache.delete(credential_cache_key(tenant_id=instance.tenant_id, provider=instance.provider))


def provider_credentials_rotate() -> int:
    """Encrypt every stored credential again with the first of MEMORY_CREDENTIAL_KEYS."""
    count = 0
    for credential in ProviderCredential.unscoped.all():  # every tenant: a deployment-wide key change
        credential.encrypted_secret = secrets.rotate(credential.encrypted_secret)
        credential.save(update_fields=["encrypted_secret", "updated_at"])
        count += 1
    return count


def api_key_create(*, tenant: Tenant, name: str, expiry_date: datetime | None = None) -> tuple[TenantApiKey, str]:
    """Create a key; the plain key is returned once and never stored."""
    storable_text(name, field="name")
    api_key, plain = TenantApiKey.objects.create_key(tenant=tenant, name=name, expiry_date=expiry_date)
    _forget(api_key.prefix)  # the prefix may have been remembered as unknown
    logger.info("api_key_created", tenant=tenant.slug, prefix=api_key.prefix)
    return api_key, plain


def api_key_revoke(*, api_key: TenantApiKey) -> None:
    with transaction.atomic():
        api_key.revoked = True
        api_key.save(update_fields=["revoked"])
    _forget(api_key.prefix)
    logger.info("api_key_revoked", tenant=api_key.tenant_id, prefix=api_key.prefix)


def auth_cache_forget(*, tenant: Tenant) -> None:
    for prefix in TenantApiKey.objects.filter(tenant=tenant).values_list("prefix", flat=True):
        _forget(prefix)


def api_key_forget(*, instance: TenantApiKey, created: bool = False, **_: object) -> None:
    """After a key is saved or deleted, however (admin, shell, a tenant's cascade): its cached record
    goes (connected to ``post_save`` and ``post_delete`` in ``apps``). A new key also empties the
    set of known prefixes once it is committed (``throttling.key_prefix_known`` reads it again)."""
    _forget(instance.prefix)
    if created:
        transaction.on_commit(_key_prefixes_forget)


def _key_prefixes_forget() -> None:
    try:
        throttling.key_prefixes_forget()
    except CacheUnavailable as error:  # the set lives KEY_PREFIXES_TTL at most: the key is known by then
        logger.warning("key_prefixes_forget_failed", error=str(error))


def tenant_forget(*, instance: Tenant, created: bool = False, **_: object) -> None:
    """After a tenant is saved, however: the cached records of its keys go (``post_save`` in ``apps``)."""
    if not created:
        auth_cache_forget(tenant=instance)


def _forget(prefix: str) -> None:
    # Deliberately not swallowed: a revocation that cannot reach the cache must say so.
    cache.delete(auth_cache_key(prefix))


# --- Operators (tenant staff in the admin) -------------------------------------------------------

OPERATOR_GROUP = "Tenant operators"
# What an operator of one tenant may do in the admin; the admin narrows every one of them to the
# operator's tenant. Message history has no change permission: it is read-only for everyone.
OPERATOR_PERMISSIONS = {
    "tenants": [
        "view_tenant",
        "change_tenant",
        "view_tenantapikey",
        "add_tenantapikey",
        "change_tenantapikey",
        # Their tenant's chat model credentials, entered write-only (the admin never shows one).
        "view_providercredential",
        "add_providercredential",
        "change_providercredential",
        "delete_providercredential",
    ],
    "conversations": [
        "view_conversation",
        "change_conversation",
        "delete_conversation",
        "view_message",
        "view_deadletter",
        "change_deadletter",
    ],
    "checkpoints": ["view_checkpoint", "delete_checkpoint"],
    "facts": ["view_userfact", "delete_userfact", "view_userfactchange"],
    # Their users' extracted memories: read, corrected and taken back (never erased), and the usage.
    "extraction": ["view_memory", "change_memory", "delete_memory", "view_extractionusage"],
    "summaries": ["view_summary"],
    "search": ["view_messageembedding"],
}


def operator_group() -> Group:
    """The group of tenant operators, with its permissions (created on first use)."""
    group, _ = Group.objects.get_or_create(name=OPERATOR_GROUP)
    wanted = Permission.objects.filter(
        content_type__app_label__in=list(OPERATOR_PERMISSIONS),
        codename__in=[codename for codenames in OPERATOR_PERMISSIONS.values() for codename in codenames],
    )
    group.permissions.add(*wanted)
    return group


@transaction.atomic
def operator_create(*, tenant: Tenant, username: str, password: str | None = None, email: str = "") -> AbstractUser:
    """A staff user bound to ``tenant``: sees and acts on that tenant only in the admin."""
    storable_text(username, field="username")
    storable_text(email, field="email")
    if password is not None:
        storable_text(password, field="password")
    user_model = get_user_model()
    user = user_model.objects.create_user(username=username, email=email, password=password, is_staff=True)
    user.groups.add(operator_group())
    TenantStaff.objects.create(user=user, tenant=tenant)
    logger.info("operator_created", tenant=tenant.slug, username=username)
    return user
