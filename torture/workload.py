"""The clients: threads that append unique, labelled messages over HTTP and read windows back,
recording every operation with its invocation and completion times (a history, as Jepsen keeps one).

Every message is unique and says where it belongs: its content is ``<tenant>|<conversation>|<client>|<n>``
(a poison's content adds ``|poison:<kind>``). One logical append may take several attempts (HTTP
requests): each attempt is recorded with its times, its answer and the (id, seq) pairs the answer gave.
The operation starts at its first attempt. An attempt's verdict, by the service's contract:

* ``ok``: 201 or 200, every message answered with its id and seq;
* ``refused``: nothing was stored (a 4xx, or a 503 ``broker_unavailable``, ``replica_unavailable``, ``idempotency_unknown``,
  ``conversation_busy`` or ``backends_unavailable``);
* ``indeterminate``: a 503 ``write_indeterminate``, whose details give the (id, seq) of each message;
* ``unknown``: no answer (a timeout, a dropped connection, a 5xx other than those 503s).

Each operation picks one client kind, mixed by the seed (``KINDS``):

* ``client-id``: ids chosen by the client, one attempt with a long timeout;
* ``in-flight``: ids chosen by the client, a short timeout (shorter than the server's work under
  faults) and a resend of the same ids and contents on every timeout or 503, until an answer settles it;
* ``server-id``: no ids; a 503 ``write_indeterminate`` hands the ids, resent as an in-flight retry;
  a timeout is simply indeterminate (found out afterwards by content);
* ``resend``: an append acknowledged earlier (often before a fault since), sent again as it was, with
  the ids it was given: it must answer 200 with the same seqs;
* ``poison``: a message no store can hold (``POISONS``), alone or beside a well-formed one: the
  request must be refused with a 4xx and nothing of it stored;
* ``read``: the window, as any agent reads it.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from memory_client.http import uuid7

READ_LIMIT = 50
# Seconds a patient client waits for an answer before it counts the attempt as unknown: longer than
# the service's broker confirm timeout (5 s), so that the answer to a publish whose confirm was lost
# reaches it.
TIMEOUT = 10.0
IN_FLIGHT_TIMEOUTS = (0.3, 2.0)  # seconds an impatient client waits before it sends the same ids again
CHAIN_DEADLINE = 30.0  # seconds a client keeps resending one append before it gives up
RESEND_DELAY = (1.0, 20.0)  # seconds between an acknowledgement and its resend

# The 503 codes that promise nothing was stored, and the one that says the write may be stored.
REFUSAL_CODES = frozenset(
    {"broker_unavailable", "idempotency_unknown", "conversation_busy", "backends_unavailable", "replica_unavailable"}
)
INDETERMINATE_CODE = "write_indeterminate"

# Client kinds and their base weights; each client scales them by a factor drawn from its seed.
KINDS = {"read": 0.2, "client-id": 0.25, "in-flight": 0.25, "server-id": 0.12, "resend": 0.12, "poison": 0.06}

DEPTH = 150  # levels of nesting in the deep poison (the service's bound is 100)
HUGE_INTEGER = "9" * 5000  # Python's int parser refuses more than 4300 digits by default
# Each poison: where it goes (the content, a metadata value or key, created_at) and its raw JSON text,
# written as is into the request body (so 1e400 is a number literal, "\ud800" a lone surrogate).
POISONS = {
    "infinity-in-metadata": ("metadata-value", "1e400"),
    "minus-infinity-in-metadata": ("metadata-value", "[1, -1e400]"),
    "nul-in-content": ("content", '"\\u0000"'),
    "nul-in-metadata-value": ("metadata-value", '"a\\u0000b"'),
    "nul-in-metadata-key": ("metadata-key", '"k\\u0000"'),
    "surrogate-in-content": ("content", '"\\ud800"'),
    "surrogate-in-metadata-value": ("metadata-value", '"a\\ud800b"'),
    "surrogate-in-metadata-key": ("metadata-key", '"k\\ud800"'),
    "huge-integer-in-metadata": ("metadata-value", HUGE_INTEGER),
    "nesting-too-deep": ("metadata-value", "[" * DEPTH + "]" * DEPTH),
    "created-at-out-of-range": ("created-at", '"0001-01-01T00:00:00+05:00"'),
}
SLOT = "@@poison@@"  # stands for the poison in the JSON text until it is written in


@dataclass
class Attempt:
    started: float
    ids: list[str | None]  # the ids sent, in request order (None: the service assigns one)
    ended: float = 0.0  # 0 while unanswered
    status: int | None = None
    code: str = ""  # the error code of a 4xx or 5xx answer
    answered: list[tuple[str, int]] = field(default_factory=list)  # (id, seq) per message, request order
    malformed: str = ""  # how the answer broke the contract's shape, if it did
    error: str = ""
    timed_out: bool = False

    @property
    def verdict(self) -> str:
        """``ok``, ``refused``, ``indeterminate`` or ``unknown`` (see the module's docstring)."""
        if self.status in (200, 201) and not self.malformed:
            return "ok"
        if self.status is not None and 400 <= self.status < 500:
            return "refused"
        if self.status == 503 and self.code in REFUSAL_CODES:
            return "refused"
        if self.status == 503 and self.code == INDETERMINATE_CODE and self.answered:
            return "indeterminate"
        return "unknown"


@dataclass
class Append:
    """One logical append: the same messages (ids and contents) over one or more attempts."""

    client: int
    tenant: str
    conversation: str
    contents: list[str]
    ids: list[str | None]  # the client's ids; None until the service's answer gives one
    kind: str = "client-id"
    messages: list[dict[str, Any]] = field(default_factory=list)  # role, content, metadata of each (no id)
    attempts: list[Attempt] = field(default_factory=list)
    poison: list[str] = field(default_factory=list)  # per message: the poison it carries, or ""
    original: Append | None = None  # the acknowledged append a resend repeats

    @property
    def started(self) -> float:
        return self.attempts[0].started if self.attempts else 0.0

    @property
    def ended(self) -> float:
        return self.attempts[-1].ended if self.attempts else 0.0

    @property
    def acknowledgement(self) -> Attempt | None:
        return next((attempt for attempt in self.attempts if attempt.verdict == "ok"), None)

    @property
    def outcome(self) -> str:
        """``ok`` if an attempt was acknowledged, ``refused`` if every one was, else ``unknown``."""
        verdicts = {attempt.verdict for attempt in self.attempts}
        if "ok" in verdicts:
            return "ok"
        if verdicts == {"refused"}:
            return "refused"
        return "unknown"


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
    faults_begun: int = 0  # the nemesis counts its faults here; a resend prefers one across a fault
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, operation: Append | Read) -> None:
        with self.lock:
            (self.appends if isinstance(operation, Append) else self.reads).append(operation)


def label(tenant: str, conversation: str, client: int, number: int) -> str:
    return f"{tenant}|{conversation}|{client}|{number}"


def tenant_of(content: str) -> str:
    return content.split("|", 1)[0]


def poison_body(message: dict[str, Any], kind: str) -> str:
    """The JSON text of one message carrying the poison ``kind`` (raw, as no JSON encoder would write it)."""
    place, raw = POISONS[kind]
    message = dict(message)
    if place == "content":
        message["content"] = message["content"] + "|" + SLOT
        text = json.dumps(message)
        return text.replace(f'|{SLOT}"', "|" + raw[1:])  # the raw string's opening quote is the content's
    if place == "metadata-value":
        message["metadata"] = {"poison": SLOT}
    elif place == "metadata-key":
        message["metadata"] = {SLOT: 1}
    else:
        message["created_at"] = SLOT
    return json.dumps(message).replace(f'"{SLOT}"', raw)


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
        kinds: dict[str, float] | None = None,
        ids: str = "uuid7",
    ) -> None:
        super().__init__(name=f"client-{number}", daemon=True)
        self.ids = ids
        self.number = number
        self.base_url = base_url
        self.tenants = tenants
        self.conversations = conversations
        self.history = history
        self.stop_event = stop
        self.rng = random.Random(seed)
        weights = KINDS if kinds is None else kinds
        self.kinds = list(weights)
        self.weights = [weight * self.rng.uniform(0.5, 1.5) for weight in weights.values()]
        self.sent = 0
        self.acknowledged: list[tuple[Append, int, float]] = []  # (append, faults begun before it, resend from)
        self.keys = {tenant.slug: tenant.key for tenant in tenants}

    def run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=TIMEOUT) as http:
            while not self.stop_event.is_set():
                kind = self.rng.choices(self.kinds, self.weights)[0]
                tenant = self.rng.choice(self.tenants).slug
                conversation = f"conv-{self.rng.randrange(self.conversations)}"
                if kind == "read":
                    self._read(http, tenant, conversation)
                elif kind == "resend":
                    self._resend(http)
                elif kind == "poison":
                    self._poison(http, tenant, conversation)
                else:
                    self._append(http, tenant, conversation, kind)

    # --- Appends ------------------------------------------------------------------------------------

    def _new_messages(self, tenant: str, conversation: str, size: int) -> list[dict[str, Any]]:
        messages = []
        for _ in range(size):
            self.sent += 1
            message: dict[str, Any] = {
                "role": self.rng.choice(("user", "assistant")),
                "content": label(tenant, conversation, self.number, self.sent),
            }
            if self.rng.random() < 0.3:
                message["metadata"] = {"turn": self.sent, "tags": ["torture", str(self.number)]}
            messages.append(message)
        return messages

    def _append(self, http: httpx.Client, tenant: str, conversation: str, kind: str) -> None:
        size = 1 if self.rng.random() < 0.8 else self.rng.randint(2, 3)
        messages = self._new_messages(tenant, conversation, size)
        ids: list[str | None] = [None] * size if kind == "server-id" else [self._new_id() for _ in messages]
        operation = Append(self.number, tenant, conversation, [m["content"] for m in messages], ids, kind=kind, messages=messages)
        self.history.add(operation)
        if kind == "client-id":
            self._attempt(http, operation, TIMEOUT)
        elif kind == "in-flight":
            self._until_settled(http, operation, self.rng.uniform(*IN_FLIGHT_TIMEOUTS))
        else:  # server-id: only a write_indeterminate answer gives the ids a resend needs
            attempt = self._attempt(http, operation, TIMEOUT)
            if attempt.verdict == "indeterminate":
                operation.ids = [message_id for message_id, _ in attempt.answered]
                self._until_settled(http, operation, TIMEOUT, pause_first=attempt)
        self._remember(operation)

    def _new_id(self) -> str:
        """A client's message id: a UUIDv7 (the ids the docs advise, told new sooner after a Redis
        loss) or, with ``--ids uuid4``, a UUIDv4."""
        return str(uuid.uuid4()) if self.ids == "uuid4" else uuid7()

    def _resend(self, http: httpx.Client) -> None:
        """An append acknowledged a while ago, again, as it was: preferably one a fault has passed since."""
        now = time.time()
        ready = [item for item in self.acknowledged if item[2] <= now]
        if not ready:
            time.sleep(0.05)
            return
        across = [item for item in ready if item[1] < self.history.faults_begun]
        original = self.rng.choice(across if across and self.rng.random() < 0.8 else ready)[0]
        operation = Append(
            self.number,
            original.tenant,
            original.conversation,
            list(original.contents),
            list(original.ids),
            kind="resend",
            messages=original.messages,
            original=original,
        )
        self.history.add(operation)
        self._until_settled(http, operation, TIMEOUT)

    def _poison(self, http: httpx.Client, tenant: str, conversation: str) -> None:
        kind = self.rng.choice(sorted(POISONS))
        messages = self._new_messages(tenant, conversation, 2 if self.rng.random() < 0.3 else 1)
        poisoned = self.rng.randrange(len(messages))
        messages[poisoned]["content"] += f"|poison:{kind}"
        poison = ["" if index != poisoned else kind for index in range(len(messages))]
        ids: list[str | None] = [self._new_id() for _ in messages]
        operation = Append(
            self.number,
            tenant,
            conversation,
            [m["content"] for m in messages],
            ids,
            kind="poison",
            messages=messages,
            poison=poison,
        )
        self.history.add(operation)
        self._attempt(http, operation, TIMEOUT)

    def _remember(self, operation: Append) -> None:
        if operation.outcome == "ok" and all(operation.ids):
            self.acknowledged.append((operation, self.history.faults_begun, time.time() + self.rng.uniform(*RESEND_DELAY)))
        elif operation.outcome != "ok":
            time.sleep(0.1)  # do not spin against an outage

    def _until_settled(self, http: httpx.Client, operation: Append, timeout: float, pause_first: Attempt | None = None) -> None:
        """Send the same ids and contents again while the answer settles nothing (no answer, a 503,
        a 5xx), until it does or ``CHAIN_DEADLINE`` passes."""
        deadline = time.monotonic() + CHAIN_DEADLINE
        previous = pause_first
        while True:
            if previous is not None:
                if time.monotonic() > deadline:
                    return
                self._pause(previous)
            attempt = self._attempt(http, operation, timeout)
            if attempt.verdict == "ok" or (attempt.status is not None and 400 <= attempt.status < 500):
                return
            previous = attempt

    def _pause(self, attempt: Attempt) -> None:
        """After an answer wait a little (a 503's Retry-After, shortened: faults here last seconds);
        after a timeout resend at once, as an impatient client does; a refused connection, briefly."""
        if attempt.status is not None:
            time.sleep(self.rng.uniform(0.1, 1.0))
        elif not attempt.timed_out:
            time.sleep(0.1)

    def _attempt(self, http: httpx.Client, operation: Append, timeout: float) -> Attempt:
        attempt = Attempt(started=time.time(), ids=list(operation.ids))
        operation.attempts.append(attempt)
        body = self._body(operation)
        try:
            response = http.post(
                f"/api/v1/conversations/{operation.conversation}/messages/",
                content=body.encode(),
                headers={"Authorization": f"Api-Key {self.keys[operation.tenant]}", "Content-Type": "application/json"},
                timeout=timeout,
            )
            attempt.status = response.status_code
            read_answer(attempt, operation, response)
        except httpx.TimeoutException as error:
            attempt.error = repr(error)[:200]
            attempt.timed_out = True
        except httpx.HTTPError as error:
            attempt.error = repr(error)[:200]
        attempt.ended = time.time()
        return attempt

    def _body(self, operation: Append) -> str:
        items = []
        for message, message_id, poison in zip(
            operation.messages, operation.ids, operation.poison or [""] * len(operation.ids), strict=True
        ):
            message = message if message_id is None else {"id": message_id, **message}
            items.append(poison_body(message, poison) if poison else json.dumps(message))
        return '{"messages": [' + ", ".join(items) + "]}"

    # --- Reads --------------------------------------------------------------------------------------

    def _read(self, http: httpx.Client, tenant: str, conversation: str) -> None:
        operation = Read(self.number, tenant, conversation, started=time.time())
        try:
            response = http.get(
                f"/api/v1/conversations/{conversation}/messages/",
                params={"limit": READ_LIMIT},
                headers={"Authorization": f"Api-Key {self.keys[tenant]}"},
            )
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


def read_answer(attempt: Attempt, operation: Append, response: httpx.Response) -> None:
    """Record what an answer says about the write, and whether its shape keeps the contract."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code in (200, 201):
        _read_acknowledgement(attempt, operation, body)
        return
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        attempt.error = response.text[:200]
        if response.status_code == 503 or 400 <= response.status_code < 500:
            attempt.malformed = f"{response.status_code} without a JSON error and its code: {response.text[:80]!r}"
        return
    attempt.code = error["code"]
    attempt.error = str(error.get("message", ""))[:200]
    if response.status_code != 503:
        return
    if not response.headers.get("Retry-After"):
        attempt.malformed = f"503 {attempt.code} without Retry-After"
    if attempt.code == INDETERMINATE_CODE:
        details = error.get("details")
        listed = details.get("messages") if isinstance(details, dict) else None
        pairs = _pairs(listed)
        if pairs is None or len(pairs) != len(operation.contents) or _contradicts(pairs, attempt.ids):
            attempt.malformed = f"503 {INDETERMINATE_CODE} without one {{id, seq}} per message: {str(details)[:120]}"
        else:
            attempt.answered = pairs


def _read_acknowledgement(attempt: Attempt, operation: Append, body: Any) -> None:
    messages = body.get("messages") if isinstance(body, dict) else None
    pairs = _pairs(messages)
    if pairs is None or len(pairs) != len(operation.contents) or _contradicts(pairs, attempt.ids):
        attempt.malformed = f"{attempt.status} without the request's messages, each with id and seq: {str(body)[:120]}"
        return
    poison = operation.poison or [""] * len(operation.contents)
    for message, content, poisoned in zip(messages, operation.contents, poison, strict=True):
        if not poisoned and message.get("content") != content:  # a poison's content may come back altered
            attempt.malformed = f"{attempt.status} answered other contents than sent: {str(message.get('content'))[:120]}"
            return
    attempt.answered = pairs
    operation.ids = [message_id for message_id, _ in pairs]


def _pairs(listed: Any) -> list[tuple[str, int]] | None:
    if not isinstance(listed, list):
        return None
    pairs = []
    for item in listed:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or type(item.get("seq")) is not int:
            return None
        pairs.append((item["id"], item["seq"]))
    return pairs


def _contradicts(pairs: list[tuple[str, int]], sent: list[str | None]) -> bool:
    return any(given is not None and given != message_id for (message_id, _), given in zip(pairs, sent, strict=True))
