"""The systems compared, each doing the same appends and reads of the newest 50 messages.

* ``service``: ``conversations.services.message_append`` (durable when it returns: broker-confirmed)
  and ``conversations.selectors.conversation_window``, in process;
* ``LangChain Redis``: langchain-community's ``RedisChatMessageHistory`` (``add_message``, ``messages[-50:]``);
* ``LangChain Postgres``: langchain-postgres's ``PostgresChatMessageHistory`` (the same, on its own table);
* ``redis floor``: redis-py ``RPUSH`` of the message JSON, ``LRANGE -50 -1`` and JSON decoding;
* ``postgres floor``: psycopg ``INSERT`` of a row and an indexed ``SELECT ... ORDER BY seq DESC LIMIT 50``;
* ``durable floor`` (appends only): the floor of the service's durable append, done directly with the
  libraries the service uses: one Redis script round trip (``EVALSHA`` of a script registered once with
  redis-py: ``HINCRBY`` of the conversation's last seq, ``HSET`` of the message JSON under its id) and one
  persistent message (``delivery_mode=2``) published with kombu on py-amqp to a durable queue of the
  service's queue type (``<MEMORY_QUEUE>-durable-floor``), waiting for RabbitMQ's publisher confirm.

Every system keeps one client per thread where its library wants that (psycopg connections, py-amqp
connections: the durable floor keeps a pool of them, one per publishing thread at a time, opened before
it is timed), and shares one where the library is thread-safe (redis-py pools), as an application would.
"""

from __future__ import annotations

import itertools
import json
import queue
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import kombu
import psycopg
import redis
from django.conf import settings
from kombu.entity import PERSISTENT_DELIVERY_MODE
from langchain_community.chat_message_histories import RedisChatMessageHistory
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_postgres import PostgresChatMessageHistory

from benchmarks.compare.workload import WINDOW
from conversations import selectors, services
from tenants.models import Tenant

LANGCHAIN_TABLE = "bench_langchain_history"


def postgres_dsn() -> str:
    database = settings.DATABASES["default"]
    parts = {
        "dbname": database["NAME"],
        "host": database["HOST"] or None,
        "port": database["PORT"] or None,
        "user": database["USER"] or None,
        "password": database["PASSWORD"] or None,
    }
    return psycopg.conninfo.make_conninfo(**{name: value for name, value in parts.items() if value})


def langchain_message(message: dict[str, str]) -> BaseMessage:
    return HumanMessage(content=message["content"]) if message["role"] == "user" else AIMessage(content=message["content"])


class System:
    name = ""
    reads = True  # stores conversations and reads their windows; False: measured on appends only

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        raise NotImplementedError

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        raise NotImplementedError

    def window(self, conversation_id: str) -> list[Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the system holds."""


class Service(System):
    name = "service"

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.query = selectors.WindowQuery(limit=WINDOW)

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        for start in range(0, len(messages), settings.MEMORY_MAX_BATCH):
            batch = messages[start : start + settings.MEMORY_MAX_BATCH]
            services.message_append(tenant=self.tenant, conversation_id=conversation_id, messages=batch)

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        services.message_append(tenant=self.tenant, conversation_id=conversation_id, messages=[message])

    def window(self, conversation_id: str) -> list[Any]:
        return selectors.conversation_window(tenant=self.tenant, conversation_id=conversation_id, query=self.query).messages


class RedisFloor(System):
    name = "redis floor"

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        self.client.rpush(f"floor:{conversation_id}", *[json.dumps(message) for message in messages])

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        self.client.rpush(f"floor:{conversation_id}", json.dumps(message))

    def window(self, conversation_id: str) -> list[Any]:
        return [json.loads(item) for item in self.client.lrange(f"floor:{conversation_id}", -WINDOW, -1)]

    def close(self) -> None:
        self.client.close()


# The Redis half of a durable append at its least: one script round trip that hands out the next seq of
# the conversation and stores the message JSON (with that seq) under its id, as RESERVE does.
# KEYS: state, messages   ARGV: id, JSON of the message without its opening brace.   Returns the seq.
DURABLE_FLOOR_SCRIPT = """
local seq = redis.call('HINCRBY', KEYS[1], 'last_seq', 1)
redis.call('HSET', KEYS[2], ARGV[1], '{"seq":' .. seq .. ',' .. ARGV[2])
return seq
"""


class _Publishers:
    """Broker connections, each with a producer on a confirming channel (``confirm_publish``), lent to
    one thread at a time (a py-amqp connection is not thread-safe), as Celery's producer pool lends
    them to the service. ``size`` are opened at once, so that no timed append opens one."""

    def __init__(self, queue_name: str, *, size: int) -> None:
        self.queue_name = queue_name
        self.idle: queue.LifoQueue[kombu.Producer] = queue.LifoQueue()
        self.opened: list[kombu.Connection] = []
        self.lock = threading.Lock()
        for _ in range(size):
            self.idle.put(self._open())

    def _open(self) -> kombu.Producer:
        connection = kombu.Connection(
            settings.CELERY_BROKER_URL,
            transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS,
            connect_timeout=settings.CELERY_BROKER_CONNECTION_TIMEOUT,
        )
        with self.lock:
            self.opened.append(connection)
        return kombu.Producer(connection.channel(), routing_key=self.queue_name, serializer="json")  # the default exchange

    @contextmanager
    def acquire(self) -> Iterator[kombu.Producer]:
        try:
            producer = self.idle.get_nowait()
        except queue.Empty:
            producer = self._open()
        yield producer  # a producer whose publish failed is not lent again
        self.idle.put(producer)

    def close(self) -> None:
        for connection in self.opened:
            connection.release()


class DurableAppendFloor(System):
    """The least a durable append can cost: one Redis script round trip, then one persistent message
    confirmed by RabbitMQ, with redis-py and kombu/py-amqp as the service uses them, and nothing else."""

    name = "durable floor"
    reads = False
    prefix = "durable-floor:"

    def __init__(self, url: str, *, connections: int = 1) -> None:
        self.client = redis.Redis.from_url(url)
        self.script = self.client.register_script(DURABLE_FLOOR_SCRIPT)
        self.queue_name = f"{settings.MEMORY_QUEUE}-durable-floor"
        self.confirm_timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("confirm_timeout")
        self.publishers = _Publishers(self.queue_name, size=max(1, connections))
        arguments = {"x-queue-type": "quorum"} if settings.MEMORY_QUEUE_TYPE == "quorum" else None
        with self.publishers.acquire() as producer:
            producer.channel.queue_delete(self.queue_name)  # one of another type, left by an earlier run
            producer.channel.queue_declare(self.queue_name, durable=True, auto_delete=False, arguments=arguments)

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        """Nothing to store: this floor is measured on appends only."""

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        message_id = uuid.uuid4().hex
        key = f"{self.prefix}{conversation_id}"
        seq = self.script(keys=[f"{key}:state", f"{key}:messages"], args=[message_id, json.dumps(message)[1:]])
        body = {"conversation_id": conversation_id, "id": message_id, "seq": seq, **message}
        with self.publishers.acquire() as producer:
            producer.publish(body, delivery_mode=PERSISTENT_DELIVERY_MODE, confirm_timeout=self.confirm_timeout)

    def window(self, conversation_id: str) -> list[Any]:
        raise NotImplementedError("the durable floor is a floor of appends")

    def close(self) -> None:
        try:
            with self.publishers.acquire() as producer:
                producer.channel.queue_delete(self.queue_name)
        finally:
            self.publishers.close()
            keys = list(self.client.scan_iter(match=f"{self.prefix}*", count=1000))
            if keys:
                self.client.delete(*keys)
            self.client.close()


class _PerThreadConnections:
    """One autocommit-free psycopg connection per thread, as a connection pool would hand out."""

    def __init__(self, *, autocommit: bool) -> None:
        self.autocommit = autocommit
        self.local = threading.local()
        self.opened: list[psycopg.Connection] = []
        self.lock = threading.Lock()

    def get(self) -> psycopg.Connection:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = self.local.connection = psycopg.connect(postgres_dsn(), autocommit=self.autocommit)
            with self.lock:
                self.opened.append(connection)
        return connection

    def close(self) -> None:
        for connection in self.opened:
            connection.close()


class PostgresFloor(System):
    name = "postgres floor"

    def __init__(self) -> None:
        self.connections = _PerThreadConnections(autocommit=True)
        self.seqs = itertools.count(1)
        setup = self.connections.get()
        setup.execute("DROP TABLE IF EXISTS bench_floor")
        setup.execute("CREATE TABLE bench_floor (id bigserial PRIMARY KEY, conversation text, seq bigint, body jsonb)")
        setup.execute("CREATE INDEX bench_floor_window ON bench_floor (conversation, seq DESC)")

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        with self.connections.get().cursor() as cursor:
            cursor.executemany(
                "INSERT INTO bench_floor (conversation, seq, body) VALUES (%s, %s, %s)",
                [(conversation_id, next(self.seqs), json.dumps(message)) for message in messages],
            )

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        self.connections.get().execute(
            "INSERT INTO bench_floor (conversation, seq, body) VALUES (%s, %s, %s)",
            (conversation_id, next(self.seqs), json.dumps(message)),
        )

    def window(self, conversation_id: str) -> list[Any]:
        sql = "SELECT body FROM bench_floor WHERE conversation = %s ORDER BY seq DESC LIMIT %s"
        return self.connections.get().execute(sql, (conversation_id, WINDOW)).fetchall()

    def analyze(self) -> None:
        self.connections.get().execute("ANALYZE bench_floor")

    def close(self) -> None:
        self.connections.close()


class LangChainHistory(System):
    """A LangChain chat history per conversation, used as its documentation shows."""

    def history(self, conversation_id: str) -> BaseChatMessageHistory:
        raise NotImplementedError

    def fill(self, conversation_id: str, messages: list[dict[str, str]]) -> None:
        self.history(conversation_id).add_messages([langchain_message(message) for message in messages])

    def append(self, conversation_id: str, message: dict[str, str]) -> None:
        self.history(conversation_id).add_message(langchain_message(message))

    def window(self, conversation_id: str) -> list[Any]:
        return self.history(conversation_id).messages[-WINDOW:]


class LangChainRedis(LangChainHistory):
    name = "LangChain Redis"

    def __init__(self, url: str) -> None:
        self.url = url
        self.histories: dict[str, RedisChatMessageHistory] = {}
        self.lock = threading.Lock()

    def history(self, conversation_id: str) -> RedisChatMessageHistory:
        with self.lock:
            if conversation_id not in self.histories:
                self.histories[conversation_id] = RedisChatMessageHistory(
                    conversation_id, url=self.url, key_prefix="bench_langchain:"
                )
            return self.histories[conversation_id]


class LangChainPostgres(LangChainHistory):
    name = "LangChain Postgres"

    def __init__(self) -> None:
        self.connections = _PerThreadConnections(autocommit=False)
        setup = self.connections.get()
        PostgresChatMessageHistory.drop_table(setup, LANGCHAIN_TABLE)
        PostgresChatMessageHistory.create_tables(setup, LANGCHAIN_TABLE)

    def history(self, conversation_id: str) -> PostgresChatMessageHistory:
        session = str(uuid.uuid5(uuid.NAMESPACE_URL, conversation_id))  # its sessions are UUIDs
        return PostgresChatMessageHistory(LANGCHAIN_TABLE, session, sync_connection=self.connections.get())

    def analyze(self) -> None:
        connection = self.connections.get()
        connection.execute(f"ANALYZE {LANGCHAIN_TABLE}")
        connection.commit()

    def close(self) -> None:
        self.connections.close()
