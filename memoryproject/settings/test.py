"""Test settings: the machine's own PostgreSQL, Redis and RabbitMQ on 127.0.0.1.

Redis uses its own database number so a test run never touches another user's keys.
"""

from .base import *  # noqa: F403
from .base import broker_queue_type, cache_settings, database_settings, durable_queues, env, with_replica

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="test-only-secret-key-not-for-production")
DEBUG = False
ALLOWED_HOSTS = ["*"]

DATABASES = with_replica(
    {"default": database_settings(env.str("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/memory"))}
)
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/9")
CACHES = cache_settings(REDIS_URL)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="amqp://guest:guest@127.0.0.1:5672//")

# The test run's own durable queues, deleted at the end of the session (tests/conftest.py).
MEMORY_QUEUE = env.str("MEMORY_QUEUE", default="memory-test")
MEMORY_DERIVED_QUEUE = env.str("MEMORY_DERIVED_QUEUE", default=f"{MEMORY_QUEUE}-derived")
CELERY_TASK_DEFAULT_QUEUE = MEMORY_QUEUE
MEMORY_QUEUE_TYPE = broker_queue_type(CELERY_BROKER_URL)
CELERY_TASK_QUEUES = durable_queues(MEMORY_QUEUE, MEMORY_DERIVED_QUEUE, queue_type=MEMORY_QUEUE_TYPE)

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

# The suite is never throttled; the throttling tests set small limits per tenant.
MEMORY_RATE_LIMIT = env.int("MEMORY_RATE_LIMIT", default=1_000_000)

# Nor are its many refused requests, all from one address; the tests of that throttle set a limit.
MEMORY_AUTH_FAILURE_LIMIT = env.int("MEMORY_AUTH_FAILURE_LIMIT", default=1_000_000)

# The metrics endpoint answers the tests that send this token.
MEMORY_METRICS_TOKEN = env.str("MEMORY_METRICS_TOKEN", default="test-metrics-token")

# The chat endpoint's provider in the tests: langchain-core's fake chat models (tests/chat/fakes.py),
# every tenant's model unless it sets its own ("" in a tenant's settings: none).
MEMORY_CHAT_PROVIDERS = {"fake": "tests.chat.fakes:chat_model"}
MEMORY_CHAT_MODEL = env.str("MEMORY_CHAT_MODEL", default="fake:echo")
