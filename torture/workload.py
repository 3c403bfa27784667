"""The clients: threads that append unique, labelled messages over HTTP and read windows back,
recording every operation with its invocation and completion times (a history, as Jepsen keeps one).

Every message is unique and says where it belongs: its content is ``<tenant>|<conversation>|<client>|<n>``
and its id is chosen by the client. An append's outcome is ``ok`` (201 or 200: acknowledged, with the
seq the service answered), ``fail`` (an answer that promises nothing was stored: 4xx, or 503 from a
broker that did not confirm) or ``unknown`` (no answer: a timeout, a dropped connection, a 5xx other
than 503). Reads record the window they saw (ids and seqs, oldest first) and where it was served from.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

READ_LIMIT = 50
TIMEOUT = 5.0  # seconds a client waits for an answer before it counts the operation as unknown


@dataclass
class Append:
    client: int
    tenant: str
    conversation: str
    ids: list[str]
    contents: list[str]
    started: float
    ended: float = 0.0
    outcome: str = "unknown"  # ok | fail | unknown
    status: int | None = None
    seqs: list[int] = field(default_factory=list)
    error: str = ""


@dataclass
class Read:
    client: int
    tenant: str
    conversation: str
    started: float
    ended: float = 0.0
    ok: bool = False
    source: str = ""
    messages: list[tuple[str, int, str]] = field(default_factory=list)  # (id, seq, content), oldest first
    status: int | None = None


@dataclass
class History:
    appends: list[Append] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, operation: Append | Read) -> None:
        with self.lock:
            (self.appends if isinstance(operation, Append) else self.reads).append(operation)


def label(tenant: str, conversation: str, client: int, number: int) -> str:
    return f"{tenant}|{conversation}|{client}|{number}"


def tenant_of(content: str) -> str:
    return content.split("|", 1)[0]


class Client(threading.Thread):
    def __init__(
        self,
        *,
        number: int,
        base_url: str,
        tenants: list[Any],
        conversations: int,
        history: History,
        stop: threading.Event,
        seed: int,
        read_share: float = 0.25,
    ) -> None:
        super().__init__(name=f"client-{number}", daemon=True)
        self.number = number
        self.base_url = base_url
        self.tenants = tenants
        self.conversations = conversations
        self.history = history
        self.stop_event = stop
        self.rng = random.Random(seed)
        self.read_share = read_share
        self.sent = 0

    def run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=TIMEOUT) as http:
            while not self.stop_event.is_set():
                tenant = self.rng.choice(self.tenants)
                conversation = f"conv-{self.rng.randrange(self.conversations)}"
                headers = {"Authorization": f"Api-Key {tenant.key}"}
                if self.rng.random() < self.read_share:
                    self._read(http, tenant.slug, conversation, headers)
                else:
                    self._append(http, tenant.slug, conversation, headers)

    def _append(self, http: httpx.Client, tenant: str, conversation: str, headers: dict[str, str]) -> None:
        size = 1 if self.rng.random() < 0.8 else self.rng.randint(2, 3)
        contents = []
        for _ in range(size):
            self.sent += 1
            contents.append(label(tenant, conversation, self.number, self.sent))
        ids = [str(uuid.uuid4()) for _ in contents]
        operation = Append(self.number, tenant, conversation, ids, contents, started=time.time())
        body = {"messages": [{"id": i, "role": "user", "content": c} for i, c in zip(ids, contents, strict=True)]}
        try:
            response = http.post(f"/api/v1/conversations/{conversation}/messages/", json=body, headers=headers)
            operation.status = response.status_code
            if response.status_code in (200, 201):
                answered = {message["id"]: message["seq"] for message in response.json()["messages"]}
                operation.seqs = [answered[i] for i in ids]
                operation.outcome = "ok"
            elif response.status_code < 500 or response.status_code == 503:
                operation.outcome = "fail"
                operation.error = response.text[:200]
            else:
                operation.error = response.text[:200]
        except (httpx.HTTPError, ValueError, KeyError) as error:
            operation.error = repr(error)[:200]
        operation.ended = time.time()
        self.history.add(operation)
        if operation.outcome != "ok":
            time.sleep(0.1)  # do not spin against an outage

    def _read(self, http: httpx.Client, tenant: str, conversation: str, headers: dict[str, str]) -> None:
        operation = Read(self.number, tenant, conversation, started=time.time())
        try:
            response = http.get(f"/api/v1/conversations/{conversation}/messages/", params={"limit": READ_LIMIT}, headers=headers)
            operation.status = response.status_code
            if response.status_code == 200:
                body = response.json()
                operation.messages = [(m["id"], m["seq"], m["content"]) for m in body["messages"]]
                operation.source = body.get("source", "")
                operation.ok = True
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        operation.ended = time.time()
        self.history.add(operation)
        if not operation.ok:
            time.sleep(0.1)
