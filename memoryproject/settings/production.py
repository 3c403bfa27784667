"""Production settings: every service URL and the secret key must come from the environment."""

from .base import *  # noqa: F403
from .base import (
    MEMORY_DERIVED_QUEUE,
    MEMORY_QUEUE,
    broker_queue_type,
    cache_settings,
    database_settings,
    durable_queues,
    env,
    with_replica,
)

SECRET_KEY = env.str("DJANGO_SECRET_KEY")
DATABASES = with_replica({"default": database_settings(env.str("DATABASE_URL"))})
REDIS_URL = env.str("REDIS_URL")
CACHES = cache_settings(REDIS_URL)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL")
MEMORY_QUEUE_TYPE = broker_queue_type(CELERY_BROKER_URL)
CELERY_TASK_QUEUES = durable_queues(MEMORY_QUEUE, MEMORY_DERIVED_QUEUE, queue_type=MEMORY_QUEUE_TYPE)

STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Redirect plain HTTP to HTTPS (behind a proxy that terminates TLS and sets X-Forwarded-Proto).
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
# Seconds browsers are told to use HTTPS only (Strict-Transport-Security); 0 sends no such header.
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
