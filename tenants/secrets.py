"""Encryption of the secrets a tenant stores with us (its model providers' API keys): Fernet
(AES-128-CBC with HMAC-SHA256) from ``cryptography``.

``MEMORY_CREDENTIAL_KEYS`` lists Fernet keys, newest first: the first encrypts, every one decrypts,
so a key is rotated by putting a new one in front and re-saving the credentials
(``manage.py provider_credential --rotate``). Unset, one key is derived from ``SECRET_KEY``: a
deployment that sets its own keys can change ``SECRET_KEY`` without losing the credentials.
"""

import base64
import hashlib
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(Exception):
    """A stored secret that none of the configured keys decrypts."""


def _fernet() -> MultiFernet:
    keys = [key.strip() for key in settings.MEMORY_CREDENTIAL_KEYS if key.strip()]
    if not keys:
        digest = hashlib.sha256(b"memory-service credentials:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as error:
        raise SecretUnreadable(
            "MEMORY_CREDENTIAL_KEYS holds a value that is not a Fernet key (32 url-safe base64-encoded bytes; "
            'make one with: python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())").'
        ) from error


def encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    return _readable(
        lambda fernet: fernet.decrypt(token.encode()),
        "put the key it was encrypted with back in the list, or store the credential again",
    )


def rotate(token: str) -> str:
    """The same secret encrypted with the first key."""
    return _readable(
        lambda fernet: fernet.rotate(token.encode()),
        "keep the key it was encrypted with in the list (after the new one) until the rotation is done",
    )


def _readable(action: Callable[[MultiFernet], bytes], remedy: str) -> str:
    try:
        return action(_fernet()).decode()
    except InvalidToken as error:
        raise SecretUnreadable(
            f"A stored credential cannot be decrypted with MEMORY_CREDENTIAL_KEYS (or SECRET_KEY when that is unset): {remedy}."
        ) from error


def hint(secret: str) -> str:
    """What an operator may see of a secret: its last four characters, when it is long enough to spare them."""
    return f"…{secret[-4:]}" if len(secret) >= 12 else "…"
