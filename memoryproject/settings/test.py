"""Test settings: the machine's own PostgreSQL, Redis and RabbitMQ on 127.0.0.1.

Redis uses its own database number so a test run never touches another user's keys.
"""

from kombu import Exchange, Queue

from .base import *  # noqa: F403
from .base import cache_settings, database_settings, env

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="test-only-secret-key-not-for-production")
DEBUG = False
ALLOWED_HOSTS = ["*"]

DATABASES = {"default": database_settings(env.str("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/memory"))}
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/9")
CACHES = cache_settings(REDIS_URL)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="amqp://guest:guest@127.0.0.1:5672//")

# The test run's own durable queue, deleted at the end of the session (tests/conftest.py).
MEMORY_QUEUE = env.str("MEMORY_QUEUE", default="memory-test")
CELERY_TASK_DEFAULT_QUEUE = MEMORY_QUEUE
CELERY_TASK_QUEUES = (
    Queue(MEMORY_QUEUE, Exchange(MEMORY_QUEUE, type="direct", durable=True), routing_key=MEMORY_QUEUE, durable=True),
)

# Static files straight from the apps and ./static, without collectstatic.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOG_LEVEL = env.str("DJANGO_LOG_LEVEL", default="WARNING")
LOGGING["root"]["level"] = LOG_LEVEL  # noqa: F405
