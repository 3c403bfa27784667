"""Settings shared by every environment, read from the environment with django-environ.

Service URLs (``DATABASE_URL``, ``REDIS_URL``, ``CELERY_BROKER_URL``) are chosen by the environment
modules; the ``MEMORY_*`` knobs are read here and a tenant may override them.
"""

import ipaddress
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

# Django's debug pages and settings checks: never on in production.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Host names the service answers (comma-separated); a request for any other host is a 400.
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework_api_key",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_structlog",
    "axes",
    "tenants",
    "conversations",
    "checkpoints",
    "search",
    "summaries",
    "facts",
    "extraction",
    "chat",
    "mcp_server",
    "store",
    # The operator's console (the health page): reads every app above, so it comes last of them.
    "console",
    # The project's own deployment checks (memoryproject/checks.py).
    "memoryproject",
]

# Sessions, the logged-in user and flash messages serve the admin: the API (an API key, no cookie)
# skips them (memoryproject/middleware.py). CSRF and the security headers stay on every request.
MIDDLEWARE = [
    # First: /healthz and /readyz answer a probe on any Host, over plain HTTP, unlogged (memoryproject/health.py).
    "memoryproject.health.HealthProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memoryproject.middleware.SessionMiddleware",
    # Django's, without the trailing-slash redirect under /api/ (the JSON 404 names the right path).
    "memoryproject.middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "memoryproject.middleware.AuthenticationMiddleware",
    "memoryproject.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # The request id on every log line, and one structured line per request.
    "memoryproject.middleware.RequestLogMiddleware",
    # Under /api/: the URI and body bounds (414, 413, chunked bodies read within the limit), and the
    # JSON error document on every error answer; inside the request log, so refusals are logged too.
    "memoryproject.middleware.ApiErrorMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryproject.urls"
WSGI_APPLICATION = "memoryproject.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where `manage.py collectstatic` puts the files the web processes serve (production requires it run).
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "var" / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
# gunicorn serves the collected static files itself (the admin and the API docs), compressed and
# with far-future caching for the hashed names.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- The operators' admin -------------------------------------------------------------------------
# Where the admin lives (a path nobody guesses keeps scanners off the login page).
ADMIN_PATH = env.str("DJANGO_ADMIN_PATH", default="admin/").strip("/") + "/"
# CIDRs of the reverse proxies in front of the web processes (e.g. "10.0.0.0/8,127.0.0.1/32"):
# X-Forwarded-For is believed only on a connection from one of them, and read from the right
# (tenants.addresses.client_ip). Empty: every client is the connection's own address.
MEMORY_TRUSTED_PROXIES = env.list("MEMORY_TRUSTED_PROXIES", default=[])
for _cidr in MEMORY_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_cidr.strip(), strict=False)
    except ValueError as _error:
        raise ImproperlyConfigured(f"MEMORY_TRUSTED_PROXIES: {_cidr!r} is not an address or CIDR ({_error}).") from _error
# Login lockout (django-axes, tenants/lockout.py), over failures in the last AXES_COOLOFF_TIME:
# AXES_FAILURE_LIMIT failures for one username from one address lock that pair;
# MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT failures from one address, whatever the usernames, lock the
# address; once a username has MEMORY_LOGIN_USER_FAILURE_LIMIT failures from all addresses together,
# each address gets one try at it (slowed, never locked for an address that has not failed). An
# operator lifts a lockout early with `manage.py axes_reset`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "tenants.lockout.LoginLockoutHandler"
AXES_CLIENT_IP_CALLABLE = "tenants.addresses.client_ip"
# Admin login failures of one username from one address that lock that pair.
AXES_FAILURE_LIMIT = env.int("DJANGO_LOGIN_FAILURE_LIMIT", default=5)
# Admin login failures from one address, whatever the usernames, that lock the address.
MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
# Admin login failures of one username from all addresses after which each address gets one try at it.
MEMORY_LOGIN_USER_FAILURE_LIMIT = env.int("MEMORY_LOGIN_USER_FAILURE_LIMIT", default=30)
# Hours a login failure counts (and a lockout lasts).
AXES_COOLOFF_TIME = env.float("DJANGO_LOGIN_LOCKOUT_HOURS", default=0.25)
# What a successful login resets: the failures of that username from that address.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "admin/lockout.html"
AXES_VERBOSE = False
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Request bounds ------------------------------------------------------------------------------
# Request bodies: the API's own limits (MEMORY_MAX_*) answer first with a precise message;
# this is the outer bound Django enforces before parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", default=8 * 1024 * 1024)
# The longest URI (path and query) the API reads, answered 414 beyond; below gunicorn's own bound on
# the request line (gunicorn.conf.py), so that the refusal is the API's JSON error.
MEMORY_MAX_URL_LENGTH = env.int("MEMORY_MAX_URL_LENGTH", default=8_000)


# --- Connections to PostgreSQL and Redis (their URLs come from the environment modules) ----------
def database_settings(url: str) -> dict:
    """One PostgreSQL connection setting from a URL, with pooled-friendly timeouts."""
    database = env.db_url_config(url)
    # Seconds a process keeps its PostgreSQL connection open for the next request or task (0: one per request).
    database["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=60)
    database["CONN_HEALTH_CHECKS"] = True
    database.setdefault("OPTIONS", {})
    # Seconds to connect to PostgreSQL: fail fast when it is unreachable, as writes are still accepted
    # (degraded, not down).
    database["OPTIONS"].setdefault("connect_timeout", env.int("MEMORY_DB_CONNECT_TIMEOUT", default=2))
    # Short indexed queries only: JIT compilation costs more than it saves (a misestimated admin
    # search spent 245 ms of 595 ms compiling).
    database["OPTIONS"].setdefault("options", "-c jit=off")
    return database


# A PostgreSQL streaming replica (a hot standby of DATABASE_URL) for the reads that may be slightly
# stale: cold windows past the cache, search, the admin's lists (core/replica.py). Empty: every read
# on DATABASE_URL.
DATABASE_REPLICA_URL = env.str("DATABASE_REPLICA_URL", default="")
# Seconds the replica may be behind the primary and still serve search and the admin's lists (a cold
# window needs it to have replayed everything the primary had written when the read began).
MEMORY_REPLICA_MAX_LAG = env.float("MEMORY_REPLICA_MAX_LAG", default=2.0)
# Seconds a process sends every read to the primary after losing the replica, before trying it again.
MEMORY_REPLICA_RETRY_SECONDS = env.float("MEMORY_REPLICA_RETRY_SECONDS", default=5.0)
DATABASE_ROUTERS = ["core.replica.ReplicaRouter"] if DATABASE_REPLICA_URL else []


def with_replica(databases: dict) -> dict:
    """``databases`` plus the ``replica`` alias when DATABASE_REPLICA_URL is set."""
    if not DATABASE_REPLICA_URL:
        return databases
    replica = database_settings(DATABASE_REPLICA_URL)
    replica["TEST"] = {"MIRROR": "default"}  # a test run's reads through it see its own test database
    return {**databases, "replica": replica}


# Prepare the window's statement (a cold read) on each PostgreSQL connection, so PostgreSQL plans it
# once rather than at every read; False behind a pooler in transaction mode that cannot keep prepared
# statements (PgBouncer before 1.21, or without max_prepared_statements).
MEMORY_DB_PREPARE = env.bool("MEMORY_DB_PREPARE", default=True)


# Redis Cluster: REDIS_URL then names one or more of its nodes, comma-separated
# (redis://10.0.0.1:6379,redis://10.0.0.2:6379); the service uses redis-py's cluster client, puts every
# key of a conversation in one slot, and waits for a replica before it acknowledges a write.
MEMORY_REDIS_CLUSTER = env.bool("MEMORY_REDIS_CLUSTER", default=False)
# Replicas that must hold an append's Redis writes before it is answered (WAIT): a failover then keeps
# what was acknowledged. Default 1 with MEMORY_REDIS_CLUSTER, else 0 (no waiting).
MEMORY_REDIS_WAIT_REPLICAS = env.int("MEMORY_REDIS_WAIT_REPLICAS", default=1 if MEMORY_REDIS_CLUSTER else 0)
# Milliseconds an append waits for those replicas before it answers 503 (below MEMORY_REDIS_SOCKET_TIMEOUT).
MEMORY_REDIS_WAIT_TIMEOUT = env.int("MEMORY_REDIS_WAIT_TIMEOUT", default=250)
# Redis Cluster: seconds an append committed through PostgreSQL while its slot fails over waits for the
# slot to come back and drop the conversation's cached window before it answers (read-your-writes).
# Set it above the cluster's failover time (cluster-node-timeout plus a few seconds).
MEMORY_REDIS_FAILOVER_WAIT = env.float("MEMORY_REDIS_FAILOVER_WAIT", default=20.0)


QUEUE_TYPES = ("quorum", "classic")
# A quorum queue drops (or dead-letters) a message redelivered more than its delivery limit, and
# RabbitMQ 4 sets a limit of 20 by default: a persist message handed back to the broker that often
# (worker restarts, holds, broker failovers) would be an acknowledged write lost. Set explicitly, so
# high that it is never reached (RabbitMQ 3.10 takes no "unlimited").
QUORUM_DELIVERY_LIMIT = 1_000_000


def durable_queues(*names: str, queue_type: str = "classic") -> tuple[Queue, ...]:
    """The durable queues of the write path, of ``queue_type`` (``broker_queue_type``).

    Classic queues keep the direct exchange of their name they always had. Quorum queues are bound to
    a topic exchange (``<name>.topic``): a task published with a countdown then waits in RabbitMQ's
    delay queues (Celery's native delayed delivery) instead of in a worker's hands, where it would
    hold one of the worker's prefetch slots, which Celery cannot raise on a quorum queue."""
    if queue_type == "quorum":
        arguments = {"x-queue-type": "quorum", "x-delivery-limit": QUORUM_DELIVERY_LIMIT}
        return tuple(
            Queue(
                name,
                Exchange(f"{name}.topic", type="topic", durable=True),
                routing_key=name,
                durable=True,
                queue_arguments=arguments,
            )
            for name in names
        )
    return tuple(Queue(name, Exchange(name, type="direct", durable=True), routing_key=name, durable=True) for name in names)


def broker_queue_type(broker_url: str) -> str:
    """``MEMORY_QUEUE_TYPE``, or where it is unset the broker's best: quorum on RabbitMQ (an
    ``amqp://`` URL, or several separated by ``;``), classic on any other transport (the embedded
    run's Redis, which has no queue types)."""
    on_rabbitmq = broker_url.split("://", 1)[0] in ("amqp", "amqps", "pyamqp")
    queue_type = MEMORY_QUEUE_TYPE or ("quorum" if on_rabbitmq else "classic")
    if queue_type not in QUEUE_TYPES:
        raise ImproperlyConfigured(f"MEMORY_QUEUE_TYPE={queue_type!r}: use one of {', '.join(QUEUE_TYPES)}, or leave it unset.")
    if queue_type == "quorum" and not on_rabbitmq:
        raise ImproperlyConfigured(
            "MEMORY_QUEUE_TYPE=quorum needs RabbitMQ (an amqp:// CELERY_BROKER_URL); unset it for this broker."
        )
    return queue_type


def cache_settings(url: str) -> dict:
    """The django-redis cache. The conversation layer uses its raw client with exact keys and Lua;
    Django's own cache API (sessions, throttles) serialises to JSON only. With
    ``MEMORY_REDIS_CLUSTER`` the client is redis-py's cluster client (``core.redis_client.ClusterClient``)."""
    return {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {
                "CLIENT_CLASS": "core.redis_client.ClusterClient"
                if MEMORY_REDIS_CLUSTER
                else "django_redis.client.DefaultClient",
                "SERIALIZER": "django_redis.serializers.json.JSONSerializer",
                # Seconds to connect to Redis before the degraded paths take over.
                "SOCKET_CONNECT_TIMEOUT": env.float("MEMORY_REDIS_CONNECT_TIMEOUT", default=0.5),
                # Seconds a Redis command may take before the degraded paths take over.
                "SOCKET_TIMEOUT": env.float("MEMORY_REDIS_SOCKET_TIMEOUT", default=0.5),
                "CONNECTION_POOL_KWARGS": {"health_check_interval": 30, "max_connections": 200},
            },
        }
    }


# --- Celery (namespace CELERY_, read by memoryproject/celery.py) -------------------------------
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TIMEZONE = "UTC"
# Write path promises (a 201 means durable; degraded, not down): confirmed, persistent publishes on durable queues;
# a task is acknowledged only after it ran, and redelivered if its worker dies.
CELERY_BROKER_TRANSPORT_OPTIONS = {"confirm_publish": True, "confirm_timeout": 5.0}
# Seconds to connect to the broker before an append answers 503 broker_unavailable.
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("MEMORY_BROKER_CONNECT_TIMEOUT", default=2.0)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Seconds between AMQP heartbeats on a worker's broker connection. A connection the broker lost
# without a word (its node restarted or failed over while the worker was idle, the TCP connection
# left half-open) is found dead once two are missed, and the worker reconnects to a live node. With
# Celery's default (120 s, lowered to RabbitMQ's 60) an idle worker sat two to three minutes on it.
CELERY_BROKER_HEARTBEAT = env.float("MEMORY_BROKER_HEARTBEAT", default=5.0)
CELERY_BROKER_POOL_LIMIT = 20
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery lowers the prefetch count when the broker connection is lost with tasks running, then
# raises it again one task at a time, each with a basic.qos round trip made by the thread that
# acknowledges the task. In the write path's thread pool that is a pool thread, reading the
# consumer's connection beside the event loop that also reads it: the two split frames between
# them, and the loop either drops the connection (UnexpectedFrame) or blocks in a read, sending
# nothing (no acks, no heartbeats) until the broker closes the connection for missed heartbeats,
# three minutes later, while acknowledged writes wait in its hands. Without the reduction the
# prefetch count stays where it is (the concurrency: the tasks of the lost channel are redelivered
# anyway), and only the event loop touches the consumer's connection.
CELERY_WORKER_ENABLE_PREFETCH_COUNT_REDUCTION = False
CELERY_TASK_DEFAULT_DELIVERY_MODE = "persistent"
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# The persist queue: acknowledged writes on their way to PostgreSQL (a durable RabbitMQ queue).
MEMORY_QUEUE = env.str("MEMORY_QUEUE", default="memory")
# Derived memory (embeddings, summaries) is slow CPU or LLM work: its own queue, so it never delays
# the persistence of acknowledged writes; a deployment may give it workers of its own.
MEMORY_DERIVED_QUEUE = env.str("MEMORY_DERIVED_QUEUE", default=f"{MEMORY_QUEUE}-derived")
CELERY_TASK_DEFAULT_QUEUE = MEMORY_QUEUE
# The type of the persist and derived queues: "quorum" (replicated on the nodes of a RabbitMQ
# cluster; RabbitMQ 3.10 or later) or "classic". Unset: quorum on RabbitMQ, classic on the embedded
# Redis broker. A queue already declared with the other type is not changed: see docs/operations.md.
MEMORY_QUEUE_TYPE = env.str("MEMORY_QUEUE_TYPE", default="")
# Each environment's module sets the queues again for its broker (``broker_queue_type``).
CELERY_TASK_QUEUES = durable_queues(MEMORY_QUEUE, MEMORY_DERIVED_QUEUE)
# Delayed tasks (a countdown) on quorum queues wait in RabbitMQ's delay queues, quorum too.
CELERY_BROKER_NATIVE_DELAYED_DELIVERY_QUEUE_TYPE = "quorum"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes the database connection around every task unless this is set: a new
# PostgreSQL connection per persisted write. With it, connections are kept and recycled the way
# Django does per request (CONN_MAX_AGE, or once unusable), by memoryproject/celery.py.
CELERY_DB_REUSE_MAX = 1_000_000
CELERY_BEAT_SCHEDULE = {
    "cache-repair-sweep": {"task": "conversations.tasks.cache_repair_sweep", "schedule": 15.0},
    # Conversations waiting for an embedding server that could not answer, queued again once it may be
    # called (each wait schedules its own resume too: this is the safety net).
    "embeddings-resume": {
        "task": "search.tasks.embeddings_resume",
        "schedule": 60.0,
        "options": {"queue": MEMORY_DERIVED_QUEUE},
    },
    # Vectors missed by a failed publish or a stopped worker.
    "embeddings-backfill": {
        "task": "search.tasks.embeddings_backfill",
        "schedule": 3600.0,
        "options": {"queue": MEMORY_DERIVED_QUEUE},
    },
    # Conversations idle for longer than their tenant's MEMORY_RETENTION_DAYS.
    "retention-sweep": {"task": "conversations.tasks.retention_sweep", "schedule": 3600.0},
    # Conversations gone quiet with turns the extractor has not read (MEMORY_EXTRACTION_QUIET_SECONDS).
    "extraction-quiet-sweep": {
        "task": "extraction.tasks.quiet_sweep",
        "schedule": 60.0,
        "options": {"queue": MEMORY_DERIVED_QUEUE},
    },
    # LangGraph store items past their TTL (each write also sweeps its tenant's).
    "store-ttl-sweep": {"task": "store.tasks.store_sweep", "schedule": 300.0},
    # The health page's history (console.tasks): a sample of the figures of /metrics. One queued while no
    # worker runs expires rather than being taken late, at the wrong time.
    "health-sample": {"task": "console.tasks.health_sample", "schedule": 30.0, "options": {"expires": 25.0}},
    # Each tenant's messages and storage of the day just ended (tenants.usage); hourly, so a missed run is caught up.
    "usage-rollup": {
        "task": "tenants.tasks.usage_rollup_due",
        "schedule": 3600.0,
        "options": {"queue": MEMORY_DERIVED_QUEUE},
    },
}

# --- REST framework ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.authentication.TenantApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.authentication.IsTenantAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "conversations.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "conversations.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # Per tenant: MEMORY_RATE_LIMIT requests per MEMORY_RATE_WINDOW seconds, counted in Redis.
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttling.TenantRateThrottle"],
}
# djangorestframework-api-key's header: the key comes in "Authorization: Api-Key <key>". Set, not left
# out: the library reads it on every request, and Django caches only a setting that exists (a missing
# one costs an AttributeError each time).
API_KEY_CUSTOM_HEADER = None
SPECTACULAR_SETTINGS = {
    "TITLE": "Conversation memory service",
    "DESCRIPTION": "Memory for LLM agents, per tenant (the API key's): conversations and their messages (appended "
    "durably, idempotent with your own ids), the context to send a model within a token budget and the memory "
    "document, LangGraph checkpoints, search over a conversation's or a user's past, summaries, facts about a user, "
    "the memories extracted from their conversations, a chat endpoint running the agent loop with memory, a LangGraph store, and erasing a user everywhere. The MCP "
    "endpoint (POST /api/v1/mcp/, JSON-RPC) offers the same memory as tools and is not described here.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # A memory's kind is one enum wherever it appears (the other "kind" fields have other choices).
    # One name for the search's scopes, which the conversation's and the user's search bodies share.
    "ENUM_NAME_OVERRIDES": {"MemoryKindEnum": "extraction.models.MemoryKind", "SearchBodyScopeEnum": "search.selectors.SCOPES"},
    # One tag per resource, in this order (conversations.api.schema.path_tag gives each operation its tag).
    "TAGS": [
        {"name": "conversations", "description": "Create, list, read, update and erase conversations."},
        {"name": "messages", "description": "Append messages (idempotent with your own ids), read the window, clear."},
        {
            "name": "context",
            "description": "What to send the model: the context within a token budget, the LLM window, the memory document.",
        },
        {"name": "checkpoints", "description": "LangGraph checkpoints and their pending writes, per namespace."},
        {"name": "search", "description": "Hybrid (BM25 and vector) search over a conversation or a user's past."},
        {"name": "summaries", "description": "Summaries of a conversation, made every few turns or on request."},
        {"name": "facts", "description": "Facts about a user (key and value), with their change history."},
        {
            "name": "memories",
            "description": "What the extractor read from a user's conversations (facts, preferences, events, relations), "
            "with their sources and history: listed, searched, corrected, taken back.",
        },
        {"name": "chat", "description": "The agent loop in one request: store, build context, ask the model, store."},
        {"name": "store", "description": "A LangGraph BaseStore: items by namespace and key, search, namespaces."},
        {"name": "users", "description": "Erase one user everywhere."},
        {"name": "status", "description": "Whether the backends answer, and the tenant's own figures."},
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from the sidecar package: the docs work without reaching a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# --- Memory knobs (a tenant may override those MEMORY_TENANT_OVERRIDABLE lists) -------------------
# Seconds a conversation's memory document lives in Redis after its last write or rebuild.
MEMORY_TTL_STANDARD = env.int("MEMORY_TTL_STANDARD", default=3600)
# Seconds a conversation's cached messages live in Redis after their last write or rebuild.
MEMORY_TTL_EXTENDED = env.int("MEMORY_TTL_EXTENDED", default=86400)
# Seconds a built context (the context endpoint's answer) is cached for the same request.
MEMORY_CONTEXT_TTL = env.int("MEMORY_CONTEXT_TTL", default=300)
# Messages a window read answers when the request gives no limit.
MEMORY_HISTORY_LIMIT = env.int("MEMORY_HISTORY_LIMIT", default=50)
# Newest turns the context endpoint always sends in full.
MEMORY_SHORT_TERM_TURNS = env.int("MEMORY_SHORT_TERM_TURNS", default=10)
# Older turns the context endpoint sends in full while they fit, or else summarises.
MEMORY_LONG_TERM_TURNS = env.int("MEMORY_LONG_TERM_TURNS", default=50)
# The context endpoint's token budget when the request gives none.
MEMORY_MAX_TOKENS = env.int("MEMORY_MAX_TOKENS", default=4000)
# Share of the budget above which the context endpoint summarises older turns.
MEMORY_COMPRESSION_THRESHOLD = env.float("MEMORY_COMPRESSION_THRESHOLD", default=0.8)
# A summary is written every this many message pairs (a user message and its answers).
MEMORY_SUMMARY_EVERY = env.int("MEMORY_SUMMARY_EVERY", default=10)
# Messages a summary covers: the last ones up to the pair it is written for.
MEMORY_SUMMARY_WINDOW = env.int("MEMORY_SUMMARY_WINDOW", default=12)
# Search hits answered when the request gives no top_k.
MEMORY_TOP_K = env.int("MEMORY_TOP_K", default=8)
# Semantic search: the least cosine similarity of a hit (hybrid search ranks without it).
MEMORY_SIMILARITY_THRESHOLD = env.float("MEMORY_SIMILARITY_THRESHOLD", default=0.45)
# Semantic search: the newest vectors of the scope compared with the query.
MEMORY_VECTOR_FETCH_LIMIT = env.int("MEMORY_VECTOR_FETCH_LIMIT", default=200)
# Search scope auto: a conversation with fewer messages than this is searched with the user's others.
MEMORY_CROSS_SESSION_TRIGGER = env.int("MEMORY_CROSS_SESSION_TRIGGER", default=50)
# Checkpoints kept per conversation and namespace (the newest; at least 1).
MEMORY_MAX_CHECKPOINTS = env.int("MEMORY_MAX_CHECKPOINTS", default=20)

# --- Long-term memory: vectors, search, summaries -------------------------------------------------
# The embedding model: an entry of search.embeddings.MODELS, run in this process, or "openai:<model>",
# a model on an OpenAI-compatible server (MEMORY_EMBEDDING_BASE_URL: Text Embeddings Inference, vLLM,
# Ollama, a gateway; empty: OpenAI's own API). "" turns embeddings off.
MEMORY_EMBEDDING_MODEL = env.str("MEMORY_EMBEDDING_MODEL", default="all-MiniLM-L6-v2")
# The embedding server of an "openai:<model>" model, ending in /v1 (e.g. http://tei.internal:8080/v1).
# A tenant's own passes the egress policy and is called with the tenant's openai credential only.
MEMORY_EMBEDDING_BASE_URL = env.str("MEMORY_EMBEDDING_BASE_URL", default="")
# The vectors' length to ask a server for (models that can shorten theirs, e.g. text-embedding-3-*),
# and the length every vector answered must have; 0: the model's own. Changing it needs a re-index
# (manage.py reembed --tenant <slug> --reindex): vectors of another length are never stored beside the old ones.
MEMORY_EMBEDDING_DIMENSIONS = env.int("MEMORY_EMBEDDING_DIMENSIONS", default=0)
# Messages embedded in one call of the model by the derived-memory worker (texts per request to a server).
MEMORY_EMBEDDING_BATCH = env.int("MEMORY_EMBEDDING_BATCH", default=64)
# Seconds one call to the embedding server may take.
MEMORY_EMBEDDING_TIMEOUT = env.float("MEMORY_EMBEDDING_TIMEOUT", default=10.0)
# Retries after a failed call to the embedding server (exponential backoff, honouring its Retry-After);
# then the messages wait for their vector and the breaker opens.
MEMORY_EMBEDDING_MAX_RETRIES = env.int("MEMORY_EMBEDDING_MAX_RETRIES", default=2)
# Seconds a search's query (or a store item) waits on the embedding server, asked once: past it the
# search answers by its words alone and says so (notice query_not_embedded).
MEMORY_EMBEDDING_QUERY_TIMEOUT = env.float("MEMORY_EMBEDDING_QUERY_TIMEOUT", default=2.0)
# Seconds every process leaves the embedding server alone after a call failed (a down server costs
# one timeout per interval); the messages meanwhile wait, and are embedded once it answers.
MEMORY_EMBEDDING_BREAKER_SECONDS = env.float("MEMORY_EMBEDDING_BREAKER_SECONDS", default=30.0)
# Characters of a text sent to an embedding server at most (servers refuse texts past their model's
# context; the local model reads 256 word pieces, about 1,000 characters). 0: no cut.
MEMORY_EMBEDDING_MAX_CHARS = env.int("MEMORY_EMBEDDING_MAX_CHARS", default=8_000)
# Threads one process gives the local embedding model (0: the library's default, every core). A
# query is a few tokens: split over threads it waits on them, and a busy server has other requests
# for the other cores (one thread: 9 ms a query on this machine's 2 loaded cores, two: 33 ms).
# Workers embedding many messages scale with processes (--concurrency) instead.
MEMORY_EMBEDDING_THREADS = env.int("MEMORY_EMBEDDING_THREADS", default=1)
# The default search mode: "hybrid" fuses keyword (BM25) and vector rankings over the whole scope,
# "semantic" is the first design's cosine search, "keyword" BM25 alone.
MEMORY_SEARCH_MODE = env.str("MEMORY_SEARCH_MODE", default="hybrid")
# Messages (or store items) one search considers at most: the newest of the scope.
MEMORY_SEARCH_CANDIDATE_LIMIT = env.int("MEMORY_SEARCH_CANDIDATE_LIMIT", default=20_000)
# Hybrid search: the cosine's share of the fused score (BM25 has the rest; search.ranking).
MEMORY_SEARCH_VECTOR_WEIGHT = env.float("MEMORY_SEARCH_VECTOR_WEIGHT", default=0.6)
# Hybrid search: the share of a turn's score the turns just before and after it receive (0: none).
MEMORY_SEARCH_NEIGHBOUR_WEIGHT = env.float("MEMORY_SEARCH_NEIGHBOUR_WEIGHT", default=0.1)
# Hybrid search: the share a turn gets from the standing of its conversation (its best turn's score
# over the best conversation's; 0: none), so that the turns of the conversations that hold the answer
# rise together. Off by default: 0.1 moved recall by less than the noise, up on real conversations,
# down on generated ones (benchmarks/retrieval/README.md).
MEMORY_SEARCH_SESSION_WEIGHT = env.float("MEMORY_SEARCH_SESSION_WEIGHT", default=0.0)
# Hybrid search: the share a turn gets when the question names its speaker (the message's "name"),
# whose name then leaves the ranked text (0: names are ranked as words).
MEMORY_SEARCH_SPEAKER_WEIGHT = env.float("MEMORY_SEARCH_SPEAKER_WEIGHT", default=0.3)
# Hybrid search: the share a turn gets when it was said within a date the question gives with its
# year ("13 October 2023", "October 2023", "2023"; the window runs 10 days past the date; 0: none).
MEMORY_SEARCH_DATE_WEIGHT = env.float("MEMORY_SEARCH_DATE_WEIGHT", default=0.2)
# Per process: vectors kept in memory between searches, checked against PostgreSQL on each (0: off).
MEMORY_VECTOR_CACHE_MB = env.int("MEMORY_VECTOR_CACHE_MB", default=128)
# Reranking (search/rerank.py): the endpoint of a cross-encoder reranking server that reorders the
# best MEMORY_RERANK_TOP_N hits of a search ("": off). A tenant's own URL passes the egress policy.
MEMORY_RERANK_URL = env.str("MEMORY_RERANK_URL", default="")
# The reranking server's wire format: "tei" (Text Embeddings Inference's /rerank) or "cohere" (the
# /v1/rerank of Cohere, Jina, Voyage and the servers that copy it).
MEMORY_RERANK_API = env.str("MEMORY_RERANK_API", default="tei")
# The model the "cohere" format names in its requests ("tei" serves one model and names none).
MEMORY_RERANK_MODEL = env.str("MEMORY_RERANK_MODEL", default="")
# How many of the hybrid order's best hits are reranked (at most 200); the rest follow in hybrid order.
MEMORY_RERANK_TOP_N = env.int("MEMORY_RERANK_TOP_N", default=30)
# Seconds a rerank call may wait on each of connecting, sending and reading (at most 10) before the
# search answers the hybrid order with a notice.
MEMORY_RERANK_TIMEOUT = env.float("MEMORY_RERANK_TIMEOUT", default=2.0)
# Seconds the reranker is not called after a call failed (core/breaker.py; 0: called every time).
MEMORY_RERANK_BREAKER_SECONDS = env.float("MEMORY_RERANK_BREAKER_SECONDS", default=30.0)
# The deployment's key for the deployment's MEMORY_RERANK_URL, sent as a bearer token when the tenant
# stores no "rerank" credential; never sent to a URL a tenant chose.
MEMORY_RERANK_API_KEY = env.str("MEMORY_RERANK_API_KEY", default="")
# The chat model of LLM summaries ("" = the rule-based summary): "openai:gpt-4o-mini" or "module:factory"
# (the code-naming form, here and in MEMORY_EMBEDDING_MODEL, is the deployment's alone: never a tenant override).
MEMORY_SUMMARY_MODEL = env.str("MEMORY_SUMMARY_MODEL", default="")
# Seconds a summary may wait on its chat model before the rule-based summary stands in.
MEMORY_SUMMARY_TIMEOUT = env.float("MEMORY_SUMMARY_TIMEOUT", default=20.0)
# Days a conversation may stay idle before the retention sweeper erases it (0 = kept until erased).
MEMORY_RETENTION_DAYS = env.int("MEMORY_RETENTION_DAYS", default=0)
# The messages get_window_for_llm hands the model.
MEMORY_MAX_TURNS_PROMPT = env.int("MEMORY_MAX_TURNS_PROMPT", default=20)

# --- Bounds on input and on the cache -------------------------------------------------------------
# One message's content, in characters.
MEMORY_MAX_CONTENT_CHARS = env.int("MEMORY_MAX_CONTENT_CHARS", default=100_000)
# One message's metadata object, as JSON (its artifact apart).
MEMORY_MAX_METADATA_BYTES = env.int("MEMORY_MAX_METADATA_BYTES", default=16_384)
# A tool result's structured output (metadata.artifact), bounded apart from the rest of the metadata.
MEMORY_MAX_ARTIFACT_BYTES = env.int("MEMORY_MAX_ARTIFACT_BYTES", default=262_144)
# The memory document of a conversation, as JSON.
MEMORY_MAX_MEMORY_BYTES = env.int("MEMORY_MAX_MEMORY_BYTES", default=1_048_576)
# One checkpoint's state and metadata, or one batch of its writes, as JSON.
MEMORY_MAX_CHECKPOINT_BYTES = env.int("MEMORY_MAX_CHECKPOINT_BYTES", default=1_048_576)
# One LangGraph store item's value, as JSON.
MEMORY_MAX_STORE_VALUE_BYTES = env.int("MEMORY_MAX_STORE_VALUE_BYTES", default=262_144)
# Messages in one append, facts in one batch, a task's checkpoint writes, operations in one store batch. A
# longer request is refused whole (400 limit_exceeded, details.limit its value); the Python and TypeScript
# clients then send their batches in parts of it (they send at most 100 per request).
MEMORY_MAX_BATCH = env.int("MEMORY_MAX_BATCH", default=100)
# The largest limit (page size, top_k) any list or search takes. A larger one is refused (400
# limit_exceeded, details.limit its value); the Python and TypeScript clients then ask in pages of it.
MEMORY_MAX_PAGE_SIZE = env.int("MEMORY_MAX_PAGE_SIZE", default=500)
# The longest conversation, message or user id.
MEMORY_MAX_ID_LENGTH = min(200, env.int("MEMORY_MAX_ID_LENGTH", default=200))  # the column holds 200
# Newest messages kept in a conversation's cached list.
MEMORY_CACHE_LIST_LIMIT = env.int("MEMORY_CACHE_LIST_LIMIT", default=1000)
# Every key of a conversation in one slot (its "<tenant>:<conv>" as a hash tag), as Redis Cluster
# needs: on by default with MEMORY_REDIS_CLUSTER.
MEMORY_REDIS_HASH_TAGS = env.bool("MEMORY_REDIS_HASH_TAGS", default=MEMORY_REDIS_CLUSTER)
# Seconds Redis keeps a write acknowledged but not yet persisted (its ledger entry).
MEMORY_PENDING_TTL = env.int("MEMORY_PENDING_TTL", default=7 * 86400)
# Seconds a UUIDv7 message id may be stamped ahead of the service's clock; one stamped further ahead
# is refused (400 clock_skew). After Redis loses its ledger, a client id stamped later than this
# (and a second) after the new ledger began is taken as new without waiting for the ledger's round of
# barriers (conversations/services/message_ids.py): smaller answers fewer idempotency_unknown.
MEMORY_MESSAGE_ID_CLOCK_SKEW = env.int("MEMORY_MESSAGE_ID_CLOCK_SKEW", default=10)
if MEMORY_MESSAGE_ID_CLOCK_SKEW < 0:
    raise ImproperlyConfigured(
        f"MEMORY_MESSAGE_ID_CLOCK_SKEW={MEMORY_MESSAGE_ID_CLOCK_SKEW}: seconds a message id may be stamped ahead, 0 or more."
    )
# Seconds an append waits for the conversation's lock before answering 503 conversation_busy.
MEMORY_APPEND_LOCK_TIMEOUT = env.float("MEMORY_APPEND_LOCK_TIMEOUT", default=5.0)
# Seconds a cache rebuild's lock lives, so a reader that died never blocks the next one.
MEMORY_REBUILD_LOCK_TTL = env.int("MEMORY_REBUILD_LOCK_TTL", default=30)

# --- API keys and throttling (tenants/authentication.py, tenants/throttling.py) -------------------
# Seconds a cached key record is believed after it was read from PostgreSQL, never longer however
# busy the key: the bound within which a revocation or a deactivated tenant is refused on every
# process, whatever wrote it.
MEMORY_AUTH_REVALIDATE = env.float("MEMORY_AUTH_REVALIDATE", default=5.0)
# Seconds a key record read from PostgreSQL may still authenticate while PostgreSQL does not answer.
MEMORY_AUTH_CACHE_TTL = env.int("MEMORY_AUTH_CACHE_TTL", default=300)
# Seconds a key prefix PostgreSQL does not know is remembered as unknown.
MEMORY_AUTH_UNKNOWN_TTL = env.int("MEMORY_AUTH_UNKNOWN_TTL", default=60)
# Requests without a valid key (none, or a wrong one) one client address may make per
# MEMORY_AUTH_FAILURE_WINDOW; over it, 429 with Retry-After and the error code `throttled`, before any
# PostgreSQL query, for every key but a real one's (a valid key is never refused for its address's failures).
MEMORY_AUTH_FAILURE_LIMIT = env.int("MEMORY_AUTH_FAILURE_LIMIT", default=60)
# Seconds over which MEMORY_AUTH_FAILURE_LIMIT counts.
MEMORY_AUTH_FAILURE_WINDOW = env.int("MEMORY_AUTH_FAILURE_WINDOW", default=60)
# Requests one tenant may make per window (tenants/throttling.py); 0 turns throttling off.
MEMORY_RATE_LIMIT = env.int("MEMORY_RATE_LIMIT", default=6_000)
# Seconds over which MEMORY_RATE_LIMIT counts.
MEMORY_RATE_WINDOW = env.int("MEMORY_RATE_WINDOW", default=60)
# /metrics names tenants: served only to a scraper sending "Authorization: Bearer <this>" (unset: off).
MEMORY_METRICS_TOKEN = env.str("MEMORY_METRICS_TOKEN", default="")

# --- The write path: persist workers and publishing -----------------------------------------------
# A persist task tries a payload that fails while PostgreSQL answers at most this many times more,
# then dead-letters it; waiting for an unreachable PostgreSQL costs no attempt (conversations/tasks.py).
MEMORY_PERSIST_MAX_RETRIES = env.int("MEMORY_PERSIST_MAX_RETRIES", default=12)
# Seconds between two attempts at most (exponential backoff with jitter below it): also the longest a
# write acknowledged during a PostgreSQL outage waits after the outage ends.
MEMORY_RETRY_BACKOFF_MAX = env.int("MEMORY_RETRY_BACKOFF_MAX", default=10)
# Seconds a persist task holds its message waiting for PostgreSQL before handing it back to the broker
# (requeued, never dropped); below RabbitMQ's consumer_timeout (30 min by default).
MEMORY_PERSIST_HOLD = env.int("MEMORY_PERSIST_HOLD", default=600)
# Concurrent appends in one process share a broker confirm: at most this many persist payloads per
# published message.
MEMORY_PUBLISH_GROUP = env.int("MEMORY_PUBLISH_GROUP", default=64)
# Seconds an appender waits for the shared publish holding its payload.
MEMORY_PUBLISH_WAIT = env.float("MEMORY_PUBLISH_WAIT", default=30.0)

# --- Facts and search bounds ----------------------------------------------------------------------
# Facts one user may hold.
MEMORY_MAX_FACTS_PER_USER = env.int("MEMORY_MAX_FACTS_PER_USER", default=500)
# The longest fact key.
MEMORY_MAX_FACT_KEY_LENGTH = min(200, env.int("MEMORY_MAX_FACT_KEY_LENGTH", default=200))  # the column holds 200
# The longest fact value, in characters.
MEMORY_MAX_FACT_VALUE_CHARS = env.int("MEMORY_MAX_FACT_VALUE_CHARS", default=4_000)
# The longest search query, in characters.
MEMORY_MAX_QUERY_CHARS = env.int("MEMORY_MAX_QUERY_CHARS", default=2_000)
# The most a search request may ask for of vector_fetch_limit, candidate_limit and cross_session_trigger.
MEMORY_MAX_SEARCH_CANDIDATES = env.int("MEMORY_MAX_SEARCH_CANDIDATES", default=100_000)

# --- The chat endpoint (chat/) --------------------------------------------------------------------
# The chat model, as init_chat_model's "provider:model" ("" = none: the endpoint answers 503 naming
# this setting).
MEMORY_CHAT_MODEL = env.str("MEMORY_CHAT_MODEL", default="")
# The chat model's server: an OpenAI-compatible base URL ("": the provider's own).
MEMORY_CHAT_BASE_URL = env.str("MEMORY_CHAT_BASE_URL", default="")
# The chat model's temperature when the request gives none.
MEMORY_CHAT_TEMPERATURE = env.float("MEMORY_CHAT_TEMPERATURE", default=0.7)
# The longest answer in tokens, and the default when the request gives no max_tokens.
MEMORY_CHAT_MAX_TOKENS = env.int("MEMORY_CHAT_MAX_TOKENS", default=2048)
# Seconds the whole chat model call may take before 504 model_timeout.
MEMORY_CHAT_TIMEOUT = env.float("MEMORY_CHAT_TIMEOUT", default=60.0)
# Retries of a failed chat model call by the provider's client.
MEMORY_CHAT_MAX_RETRIES = env.int("MEMORY_CHAT_MAX_RETRIES", default=1)
# Chat runs a tenant may have at once, across every web process (chat/runs.py; 0: no bound). Over it,
# 429 chat_limit_reached. A run is one conversation's turn: a second message to a conversation whose
# run is active is a 409 run_active whatever this bound.
MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT = env.int("MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT", default=4)
# The share of a web process's threads that chats (which wait on a model for up to MEMORY_CHAT_TIMEOUT)
# may hold at once, rounded down, at least one and never every thread; the rest serve everything
# else. Over it, 503 chat_capacity at once. Known under gunicorn (gunicorn.conf.py tells the worker
# its thread count); elsewhere (runserver, the test client) no per-process bound.
MEMORY_CHAT_THREAD_SHARE = env.float("MEMORY_CHAT_THREAD_SHARE", default=0.5)
# Providers of the deployment's own beyond init_chat_model's: name -> "dotted.module:factory", the
# factory called with the keyword arguments model, temperature, max_tokens, timeout, max_retries and,
# when set, base_url and api_key.
MEMORY_CHAT_PROVIDERS = env.dict("MEMORY_CHAT_PROVIDERS", default={})

# --- Extracted memories (extraction/) -------------------------------------------------------------
# Extraction is opt-in: with it on (per tenant, in its settings), the derived workers have the
# tenant's chat model (MEMORY_CHAT_MODEL) read each user's new turns and keep what they say about the
# user and the people they name as memories. Off, or without a chat model, nothing is extracted.
MEMORY_EXTRACTION_ENABLED = env.bool("MEMORY_EXTRACTION_ENABLED", default=False)
# Another model of MEMORY_CHAT_MODEL's provider and server for extraction, by its name (e.g.
# "gpt-4o-mini"; "": MEMORY_CHAT_MODEL's own).
MEMORY_EXTRACTION_MODEL = env.str("MEMORY_EXTRACTION_MODEL", default="")
# A conversation is read once this many new user and assistant turns are persisted...
MEMORY_EXTRACTION_BATCH_TURNS = env.int("MEMORY_EXTRACTION_BATCH_TURNS", default=10)
# ...or once it has been quiet this many seconds with turns not yet read (0: only by batches).
MEMORY_EXTRACTION_QUIET_SECONDS = env.int("MEMORY_EXTRACTION_QUIET_SECONDS", default=300)
# The most new turns one model call reads (a longer backlog is read in several calls, in order).
MEMORY_EXTRACTION_MAX_TURNS = env.int("MEMORY_EXTRACTION_MAX_TURNS", default=40)
# The user's existing memories given to the model with the new turns (the most related ones).
MEMORY_EXTRACTION_RELATED = env.int("MEMORY_EXTRACTION_RELATED", default=30)
# Seconds one extraction call may take before it counts as failed.
MEMORY_EXTRACTION_TIMEOUT = env.float("MEMORY_EXTRACTION_TIMEOUT", default=60.0)
# Attempts after the first for a model that fails, times out or answers what cannot be applied
# (exponential backoff up to MEMORY_RETRY_BACKOFF_MAX seconds between them); then a dead letter.
MEMORY_EXTRACTION_MAX_RETRIES = env.int("MEMORY_EXTRACTION_MAX_RETRIES", default=4)
# Extraction calls per tenant and UTC day at most (0: no bound). Past it (or past the tokens' bound)
# reads are skipped, counted, and read once the bound allows: nothing is lost.
MEMORY_EXTRACTION_DAILY_CALLS = env.int("MEMORY_EXTRACTION_DAILY_CALLS", default=2_000)
# Extraction tokens (prompt and answer) per tenant and UTC day at most (0: no bound).
MEMORY_EXTRACTION_DAILY_TOKENS = env.int("MEMORY_EXTRACTION_DAILY_TOKENS", default=4_000_000)

# --- Secrets and egress ---------------------------------------------------------------------------
# What a tenant's own URLs (MEMORY_CHAT_BASE_URL, MEMORY_EMBEDDING_BASE_URL, MEMORY_RERANK_URL) may reach although the egress policy
# (tenants/egress.py) refuses it: a self-hosted model server on a private network. Comma-separated
# entries [scheme://]host[:port], the host an address, a CIDR network (no port) or a name, e.g.
# "http://127.0.0.1:11434,https://vllm.internal:8443,10.20.0.0/16" (an entry without a port allows every
# port of its host: name the port). A malformed entry stops the process at start. Empty: loopback,
# private, link-local and metadata addresses are refused to every tenant.
MEMORY_EGRESS_ALLOWED_NETWORKS = env.list("MEMORY_EGRESS_ALLOWED_NETWORKS", default=[])
# Fernet keys (comma-separated; the first encrypts, all decrypt, so a new key can be rotated in) of
# the providers' credentials stored per tenant. Unset: one key derived from SECRET_KEY.
MEMORY_CREDENTIAL_KEYS = env.list("MEMORY_CREDENTIAL_KEYS", default=[])
# Secrets of the tombstones' HMAC (conversations.models.tombstone_key), newest first: the first keys
# new tombstones, every one finds old ones. Unset: SECRET_KEY, then SECRET_KEY_FALLBACKS.
MEMORY_TOMBSTONE_KEYS = env.list("MEMORY_TOMBSTONE_KEYS", default=[])

# Overridable per tenant through Tenant.settings (validated against this list).
MEMORY_TENANT_OVERRIDABLE = (
    "MEMORY_TTL_STANDARD",
    "MEMORY_TTL_EXTENDED",
    "MEMORY_CONTEXT_TTL",
    "MEMORY_HISTORY_LIMIT",
    "MEMORY_SHORT_TERM_TURNS",
    "MEMORY_LONG_TERM_TURNS",
    "MEMORY_MAX_TOKENS",
    "MEMORY_COMPRESSION_THRESHOLD",
    "MEMORY_SUMMARY_EVERY",
    "MEMORY_SUMMARY_WINDOW",
    "MEMORY_TOP_K",
    "MEMORY_SIMILARITY_THRESHOLD",
    "MEMORY_VECTOR_FETCH_LIMIT",
    "MEMORY_CROSS_SESSION_TRIGGER",
    "MEMORY_MAX_CHECKPOINTS",
    "MEMORY_MAX_TURNS_PROMPT",
    "MEMORY_EMBEDDING_MODEL",
    "MEMORY_EMBEDDING_BASE_URL",
    "MEMORY_EMBEDDING_DIMENSIONS",
    "MEMORY_EMBEDDING_BATCH",
    "MEMORY_EMBEDDING_TIMEOUT",
    "MEMORY_EMBEDDING_MAX_RETRIES",
    "MEMORY_EMBEDDING_QUERY_TIMEOUT",
    "MEMORY_EMBEDDING_BREAKER_SECONDS",
    "MEMORY_EMBEDDING_MAX_CHARS",
    "MEMORY_SEARCH_MODE",
    "MEMORY_SEARCH_CANDIDATE_LIMIT",
    "MEMORY_SEARCH_VECTOR_WEIGHT",
    "MEMORY_SEARCH_NEIGHBOUR_WEIGHT",
    "MEMORY_SEARCH_SESSION_WEIGHT",
    "MEMORY_SEARCH_SPEAKER_WEIGHT",
    "MEMORY_SEARCH_DATE_WEIGHT",
    "MEMORY_RERANK_URL",
    "MEMORY_RERANK_API",
    "MEMORY_RERANK_MODEL",
    "MEMORY_RERANK_TOP_N",
    "MEMORY_RERANK_TIMEOUT",
    "MEMORY_RERANK_BREAKER_SECONDS",
    "MEMORY_SUMMARY_MODEL",
    "MEMORY_RETENTION_DAYS",
    "MEMORY_RATE_LIMIT",
    "MEMORY_RATE_WINDOW",
    "MEMORY_CHAT_MODEL",
    "MEMORY_CHAT_BASE_URL",
    "MEMORY_CHAT_TEMPERATURE",
    "MEMORY_CHAT_MAX_TOKENS",
    "MEMORY_CHAT_TIMEOUT",
    "MEMORY_CHAT_MAX_RETRIES",
    "MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT",
    "MEMORY_EXTRACTION_ENABLED",
    "MEMORY_EXTRACTION_MODEL",
    "MEMORY_EXTRACTION_BATCH_TURNS",
    "MEMORY_EXTRACTION_QUIET_SECONDS",
    "MEMORY_EXTRACTION_MAX_TURNS",
    "MEMORY_EXTRACTION_RELATED",
    "MEMORY_EXTRACTION_DAILY_CALLS",
    "MEMORY_EXTRACTION_DAILY_TOKENS",
)

# --- Logging: structured (structlog), one JSON object a line --------------------------------------
import structlog  # noqa: E402

# The service's log level (one JSON object a line on standard error).
LOG_LEVEL = env.str("DJANGO_LOG_LEVEL", default="INFO")
# Whether logs may carry what users said: off, a request line shows the values of the parameters
# that are counts, flags and choices only (a search's text is "...") and a model provider's error its
# type, status and code. On, for an operator chasing a fault, every query value and the provider's
# message are logged too; a model's refused answer is described by the rule it broke either way.
MEMORY_LOG_CONTENT = env.bool("MEMORY_LOG_CONTENT", default=False)
# Celery's per-task lines (received, succeeded); the service logs each persisted write itself.
WORKER_TASK_LOG_LEVEL = env.str("CELERY_TASK_LOG_LEVEL", default="WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": structlog.stdlib.ProcessorFormatter,
            "processor": structlog.processors.JSONRenderer(),
            "foreign_pre_chain": [
                structlog.contextvars.merge_contextvars,
                structlog.processors.TimeStamper(fmt="iso"),
                structlog.stdlib.add_logger_name,
                structlog.stdlib.add_log_level,
            ],
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django_structlog": {"level": "WARNING"},
        # Celery's two lines per task (received, succeeded) cost a write worker a tenth of its CPU;
        # the service logs each persisted write itself (``messages_persisted``: conversation, rows,
        # lag). Retries, failures and the worker's own events still log.
        "celery.app.trace": {"level": WORKER_TASK_LOG_LEVEL},
        "celery.worker.strategy": {"level": WORKER_TASK_LOG_LEVEL},
        # The MCP SDK starts a session manager for every request (mcp_server.server) and says so at INFO.
        "mcp": {"level": "WARNING"},
    },
}
structlog.configure(
    processors=[
        # First: an event below its logger's level is dropped before any work is done for it.
        structlog.stdlib.filter_by_level,
        structlog.contextvars.merge_contextvars,
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
    ],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
    cache_logger_on_first_use=True,
)
