"""The checker: the history of the clients against what PostgreSQL, the dead-letter table, the broker
and the cache hold at the end, by the service's contract (``torture/workload.py`` says what each
answer promises).

A message is known by its content, unique and labelled; its id is the client's, or the one an answer
gave. Its attempts are every request that carried it: the attempts of its append, then of any resend.
It is *acknowledged* by the first 200/201 that answered it, with the seq that answer gave.

Counts that must be zero (the write path's promises):

* ``lost``: acknowledged, and neither in PostgreSQL, nor in the dead-letter table, nor in the broker
  after the drain: nowhere.
* ``stuck``: a message still in the broker after the drain (its task retried without end, or never
  run), or acknowledged and neither stored nor dead-lettered when the broker could not be read.
* ``dead_lettered``: a well-formed message in the dead-letter table (outages here last seconds, far
  below the bounded retries: a storable message there was refused by the service itself).
* ``duplicated``: a message stored more than once, or in another conversation, or shown twice by a read.
* ``reordered``: real-time order broken: a message acknowledged before another's first attempt began
  must have the smaller seq (the acknowledged one; for a message never acknowledged, the stored one).
* ``seq_mismatch``: the seqs of one message disagree: its acknowledgement's, a read's, the final
  window's, PostgreSQL's (or, never acknowledged, a ``write_indeterminate``'s and PostgreSQL's).
* ``final_window_differs``: the final window served by the API (the cache, rebuilt if needed)
  differs from PostgreSQL's newest rows: other messages, other seqs or another order.
* ``resend_answered_201``: a message of an attempt begun after its acknowledgement (the messages of
  one request are acknowledged together), answered 201 (taken as new) instead of 200; one per message.
* ``resend_refused``: such an attempt answered with a 4xx (a resend of an acknowledged message as
  it was must answer 200, or a 503 while the service cannot tell).
* ``resend_seq_changed``: an answer (200/201, or ``write_indeterminate``'s details) giving a message
  a seq other than the one it was acknowledged with.
* ``refused_but_stored``: a message every attempt of which was refused (4xx, or 503
  ``broker_unavailable``, ``idempotency_unknown``, ``conversation_busy``, ``backends_unavailable``)
  and which is stored, dead-lettered, in the broker or seen by a read; or answered 200 (already
  known) when every earlier attempt had been refused.
* ``poison_acknowledged``: a message no store can hold answered 200/201.
* ``poison_stored``: such a message in PostgreSQL, in the dead-letter table or in a read.
* ``poison_server_error``: such a message answered with a 5xx other than 503 (it must be refused
  with a 4xx; a 503 or no answer during a fault says nothing).
* ``malformed_answers``: an answer whose shape breaks the contract (a 2xx without each message's id
  and seq, a 4xx/503 without its JSON error and code, a 503 without Retry-After, a
  ``write_indeterminate`` without one ``{id, seq}`` per message).
* ``vanished``: a message a read showed and a later read of the same conversation (both served from
  the cache) did not, although it was inside that later window.
* ``stale_reads``: a read served from the cache missing a message acknowledged before the read began
  (read-your-writes while Redis is up).
* ``phantoms``: a message stored or seen that no client sent.
* ``cross_tenant``: a message of one tenant seen by or stored for another.

Figures: ``acknowledged``, ``refused``, ``poison_unrefused`` (poison answered neither 2xx nor 4xx: a 5xx
or no answer, which the contract reads as indeterminate), ``unknown`` (messages whose appends ended with no
acknowledgement and not all refused: indeterminate by nature) and ``unknown_stored`` of them,
``indeterminate`` (503 ``write_indeterminate`` answers), ``idempotency_unknown`` (503 answers) of
``client_id_attempts`` (the attempts of appends that sent ids of their own, poison aside),
``answers`` (every attempt's status and code), ``appends_by_kind``, and the time from acknowledgement to row
(median, p99, max).
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from torture.workload import INDETERMINATE_CODE, READ_LIMIT, Append, Attempt, History, Read, tenant_of

MUST_BE_ZERO = (
    "lost",
    "stuck",
    "dead_lettered",
    "duplicated",
    "reordered",
    "seq_mismatch",
    "final_window_differs",
    "resend_answered_201",
    "resend_refused",
    "resend_seq_changed",
    "refused_but_stored",
    "poison_acknowledged",
    "poison_stored",
    "poison_server_error",
    "malformed_answers",
    "vanished",
    "stale_reads",
    "phantoms",
    "cross_tenant",
)
FIGURES = (
    "messages",
    "attempts",
    "acknowledged",
    "refused",
    "unknown",
    "unknown_stored",
    "indeterminate",
    "idempotency_unknown",
    "client_id_attempts",
    "resends",
    "poison_sent",
    "poison_refused",
    "poison_unrefused",
    "stored",
    "dead_letters",
    "in_broker_after_drain",
    "reads",
    "reads_from_cache",
)


@dataclass
class Report:
    messages: int = 0
    attempts: int = 0
    acknowledged: int = 0
    refused: int = 0
    unknown: int = 0
    unknown_stored: int = 0
    indeterminate: int = 0
    idempotency_unknown: int = 0
    client_id_attempts: int = 0
    resends: int = 0
    poison_sent: int = 0
    poison_refused: int = 0
    poison_unrefused: int = 0
    stored: int = 0
    dead_letters: int = 0
    in_broker_after_drain: int = 0
    reads: int = 0
    reads_from_cache: int = 0
    lost: int = 0
    stuck: int = 0
    dead_lettered: int = 0
    duplicated: int = 0
    reordered: int = 0
    seq_mismatch: int = 0
    final_window_differs: int = 0
    resend_answered_201: int = 0
    resend_refused: int = 0
    resend_seq_changed: int = 0
    refused_but_stored: int = 0
    poison_acknowledged: int = 0
    poison_stored: int = 0
    poison_server_error: int = 0
    malformed_answers: int = 0
    vanished: int = 0
    stale_reads: int = 0
    phantoms: int = 0
    cross_tenant: int = 0
    lag_median_seconds: float = 0.0
    lag_p99_seconds: float = 0.0
    lag_max_seconds: float = 0.0
    answers: dict[str, int] = field(default_factory=dict)
    appends_by_kind: dict[str, int] = field(default_factory=dict)
    by_client_kind: dict[str, dict[str, int]] = field(default_factory=dict)  # count -> client kind -> how many
    poison_answers: dict[str, dict[str, int]] = field(default_factory=dict)  # poison -> answer -> how many
    faults: list[str] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(getattr(self, name) == 0 for name in MUST_BE_ZERO)

    def note(self, kind: str, example: str, of: Message | None = None) -> None:
        """Count one ``kind``, keep the first examples, and say which client kind sent the message ``of``."""
        setattr(self, kind, getattr(self, kind) + 1)
        examples = self.examples.setdefault(kind, [])
        if len(examples) < 5:
            examples.append(example)
        if of is not None:
            kinds = self.by_client_kind.setdefault(kind, {})
            kinds[of.append.kind] = kinds.get(of.append.kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ok": self.ok}


@dataclass(frozen=True)
class Row:
    tenant: str
    conversation: str
    id: str
    seq: int
    content: str
    persisted_at: float


@dataclass(frozen=True)
class Held:
    """A message found in a persist task's payload: in the dead-letter table, or in the broker."""

    tenant: str
    conversation: str
    id: str
    seq: int | None
    content: str


def held_messages(value: Any) -> list[Held]:
    """Every message in a task's arguments or a dead letter's payload, wherever it nests: a payload is
    an object with ``tenant_slug``, ``conversation_id`` and a list of ``messages``."""
    found = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            messages = item.get("messages")
            if isinstance(messages, list) and "conversation_id" in item:
                for message in messages:
                    if isinstance(message, dict) and "id" in message:
                        seq = message.get("seq")
                        found.append(
                            Held(
                                tenant=str(item.get("tenant_slug", "")),
                                conversation=str(item["conversation_id"]),
                                id=str(message["id"]),
                                seq=seq if isinstance(seq, int) else None,
                                content=str(message.get("content", "")),
                            )
                        )
            else:
                pending.extend(item.values())
    return found


@dataclass
class Message:
    """Everything known about one message sent by a client."""

    content: str
    tenant: str
    conversation: str
    poison: str
    append: Append  # its first append
    index: int  # its place in that append's request
    attempts: list[tuple[Attempt, Append, int]] = field(default_factory=list)  # (attempt, append, index)
    ids: set[str] = field(default_factory=set)
    acknowledged: tuple[Attempt, int] | None = None  # the first 2xx and the seq it gave

    @property
    def started(self) -> float:
        return self.append.started

    @property
    def acknowledged_at(self) -> float:
        return self.acknowledged[0].ended if self.acknowledged else float("inf")

    @property
    def acknowledged_seq(self) -> int | None:
        return self.acknowledged[1] if self.acknowledged else None

    def answered_seqs(self) -> list[tuple[Attempt, int]]:
        """Every (attempt, seq) an answer gave this message, in the order the answers came."""
        given = [(attempt, attempt.answered[index][1]) for attempt, _, index in self.attempts if attempt.answered]
        return sorted(given, key=lambda item: item[0].ended)


def check(
    *,
    history: History,
    rows: list[Row],
    final_windows: dict[tuple[str, str], list[tuple[str, int]]],
    unreadable_windows: dict[tuple[str, str], str] | None = None,
    dead_letters: list[Held] = (),
    leftovers: list[Held] | None = (),
    forgotten_at: list[float] = (),
    unreachable: list[tuple[float, float]] = (),
) -> Report:
    """``final_windows``: each conversation's window read through the API at the end, oldest first
    (``unreadable_windows``: those that could not be read, and why); ``dead_letters``: the messages of the dead-letter table; ``leftovers``: those still in the
    broker after the drain (None: it could not be read); ``forgotten_at``: when Redis restarted
    empty; ``unreachable``: when it did not answer (paused).

    Read-your-writes and "never shown then hidden" are promised while Redis is up and keeps what it
    holds (promises 4 and 5, read-your-writes and rebuilds): reads on both sides of a restart are not compared, and a message
    acknowledged before a restart, or while Redis did not answer (written through PostgreSQL's seq
    clock and the broker alone), is expected in cached reads once it is persisted."""
    report = Report()
    messages = _messages(history, report)
    by_id: dict[str, Message] = {}
    for message in messages.values():
        for message_id in message.ids:
            by_id[message_id] = message

    def owner(message_id: str, content: str) -> Message | None:
        return by_id.get(message_id) or messages.get(content)

    stored: dict[str, list[Row]] = defaultdict(list)  # content -> rows
    for row in rows:
        message = owner(row.id, row.content)
        if message is None:
            report.note("phantoms", f"{row.content!r} (id {row.id}) stored in {row.tenant}/{row.conversation}, never sent")
            continue
        stored[message.content].append(row)
        if message.poison:
            report.note("poison_stored", f"{message.content} ({message.poison}) stored with seq {row.seq}", of=message)
        if tenant_of(message.content) != row.tenant:
            report.note("cross_tenant", f"{message.content} stored for {row.tenant}", of=message)
        elif (row.tenant, row.conversation) != (message.tenant, message.conversation):
            report.note("duplicated", f"{message.content} stored in {row.conversation}", of=message)
    report.stored = len(rows)
    dead = _held_by(dead_letters, owner)
    report.dead_letters = len(dead_letters)
    in_broker = _held_by(leftovers or (), owner)
    report.in_broker_after_drain = len(leftovers or ())
    seen = _seen(history, owner, report)

    for message in messages.values():
        rows_of = stored.get(message.content, [])
        _check_durability(report, message, rows_of, dead.get(message.content), in_broker.get(message.content), leftovers)
        _check_answers(report, message)
        _check_refusal(report, message, rows_of, dead, in_broker, seen)
        _check_seqs(report, message, rows_of, seen.get(message.content, []), final_windows)
        if len(rows_of) > 1:
            report.note("duplicated", f"{message.content} stored {len(rows_of)} times", of=message)
        if message.poison and seen.get(message.content):
            report.note("poison_stored", f"{message.content} ({message.poison}) seen by a read", of=message)
    for content in in_broker:
        if content not in messages:
            report.note("stuck", f"{content!r} (never sent) still in the broker after the drain")
    for content in dead:
        if content not in messages:
            report.note("phantoms", f"{content!r} in the dead-letter table, never sent")

    _check_order(report, messages, stored)
    _check_lag(report, messages, stored)
    _check_final_windows(report, rows, final_windows, unreadable_windows or {})
    _check_reads(report, history, messages, stored, list(forgotten_at), list(unreachable))
    return report


def _messages(history: History, report: Report) -> dict[str, Message]:
    """Each message the clients sent, with every attempt that carried it."""
    messages: dict[str, Message] = {}
    answers: Counter[str] = Counter()
    for append in sorted(history.appends, key=lambda append: append.started):
        poison = append.poison or [""] * len(append.contents)
        for index, content in enumerate(append.contents):
            message = messages.get(content)
            if message is None:
                message = messages[content] = Message(
                    content, append.tenant, append.conversation, poison[index], append=append, index=index
                )
            message.ids.update(message_id for message_id in [append.ids[index]] if message_id)
            for attempt in append.attempts:
                message.attempts.append((attempt, append, index))
                if attempt.answered:
                    message.ids.add(attempt.answered[index][0])
        report.appends_by_kind[append.kind] = report.appends_by_kind.get(append.kind, 0) + 1
        if append.kind == "resend":
            report.resends += 1
        for attempt in append.attempts:
            report.attempts += 1
            answers[f"{attempt.status or 'no answer'} {attempt.code}".strip()] += 1
            report.indeterminate += attempt.status == 503 and attempt.code == INDETERMINATE_CODE
            report.idempotency_unknown += attempt.status == 503 and attempt.code == "idempotency_unknown"
            report.client_id_attempts += append.kind in ("client-id", "in-flight", "resend")
            if attempt.malformed:
                report.note("malformed_answers", f"{append.contents[0]}: {attempt.malformed}")
    report.answers = dict(sorted(answers.items()))
    for message in messages.values():
        message.attempts.sort(key=lambda item: item[0].started)
        first = next(((attempt, index) for attempt, _, index in message.attempts if attempt.verdict == "ok"), None)
        if first is not None:
            message.acknowledged = (first[0], first[0].answered[first[1]][1])
        report.messages += 1
        if message.poison:
            report.poison_sent += 1
            answers_of = report.poison_answers.setdefault(message.poison, {})
            for attempt, _, _ in message.attempts:
                answer = f"{attempt.status or 'no answer'} {attempt.code}".strip()
                answers_of[answer] = answers_of.get(answer, 0) + 1
                if attempt.status is not None and attempt.status >= 500 and attempt.status != 503:
                    report.note("poison_server_error", f"{message.content} ({message.poison}) answered {answer}", of=message)
            if message.acknowledged:
                report.note(
                    "poison_acknowledged",
                    f"{message.content} ({message.poison}) answered {message.acknowledged[0].status} "
                    f"with seq {message.acknowledged_seq}",
                    of=message,
                )
            elif all(attempt.status is not None and 400 <= attempt.status < 500 for attempt, _, _ in message.attempts):
                report.poison_refused += 1
            else:
                report.poison_unrefused += 1
        elif message.acknowledged:
            report.acknowledged += 1
        elif message.attempts and all(attempt.verdict == "refused" for attempt, _, _ in message.attempts):
            report.refused += 1
        else:
            report.unknown += 1
    return messages


def _held_by(held: list[Held] | tuple[()], owner: Any) -> dict[str, list[Held]]:
    by_content: dict[str, list[Held]] = defaultdict(list)
    for item in held:
        message = owner(item.id, item.content)
        by_content[message.content if message else item.content].append(item)
    return by_content


def _seen(history: History, owner: Any, report: Report) -> dict[str, list[tuple[Read, int]]]:
    """The reads that showed each message, with the seq each showed."""
    seen: dict[str, list[tuple[Read, int]]] = defaultdict(list)
    shown_twice: set[str] = set()  # counted once, however many reads show it twice
    senders: dict[str, Message] = {}
    for read in history.reads:
        if not read.ok:
            continue
        shown: Counter[str] = Counter()
        for message_id, seq, content in read.messages:
            message = owner(message_id, content)
            if tenant_of(content) != read.tenant:
                report.note("cross_tenant", f"{content} seen by {read.tenant}")
            elif message is None:
                report.note("phantoms", f"{content!r} (id {message_id}) seen, never sent")
            else:
                seen[message.content].append((read, seq))
                shown[message.content] += 1
                senders[message.content] = message
        for content, times in shown.items():
            if times > 1 and content not in shown_twice:
                shown_twice.add(content)
                report.note(
                    "duplicated", f"{content} shown {times} times by one read at {clock(read.started)}", of=senders[content]
                )
    return seen


def _check_durability(
    report: Report,
    message: Message,
    rows: list[Row],
    dead: list[Held] | None,
    in_broker: list[Held] | None,
    leftovers: list[Held] | None,
) -> None:
    acknowledged = f"acknowledged with seq {message.acknowledged_seq} at {clock(message.acknowledged_at)}"
    if in_broker:
        report.note(
            "stuck",
            f"{message.content} still in the broker after the drain ({acknowledged if message.acknowledged else 'never acknowledged'})",
            of=message,
        )
    if dead:
        if message.poison:
            report.note("poison_stored", f"{message.content} ({message.poison}) in the dead-letter table", of=message)
        else:
            what = acknowledged if message.acknowledged else "never acknowledged"
            report.note("dead_lettered", f"{message.content} (well-formed, {what}) in the dead-letter table", of=message)
    if message.acknowledged and not message.poison and not rows and not dead and not in_broker:
        if leftovers is None:
            report.note("stuck", f"{message.content} ({acknowledged}) not persisted; the broker could not be read", of=message)
        else:
            report.note(
                "lost", f"{message.content} ({acknowledged}) is nowhere: not stored, not dead-lettered, not queued", of=message
            )
    if not message.acknowledged and rows and not message.poison:
        report.unknown_stored += any(attempt.verdict != "refused" for attempt, _, _ in message.attempts)


def _check_answers(report: Report, message: Message) -> None:
    """Resends of an acknowledged message: 200, with the seq it was acknowledged with. The messages of
    one request are answered together, so an attempt begun after this message's acknowledgement
    resends only acknowledged messages."""
    if message.acknowledged is None:
        return
    acknowledged_at, seq = message.acknowledged_at, message.acknowledged_seq
    for attempt, _, _ in message.attempts:
        if attempt.started <= acknowledged_at:
            continue
        if attempt.status == 201:
            report.note(
                "resend_answered_201",
                f"{message.content}: acknowledged at {clock(acknowledged_at)} with seq {seq}, "
                f"resent at {clock(attempt.started)}, answered 201",
                of=message,
            )
        elif attempt.status is not None and 400 <= attempt.status < 500:
            report.note(
                "resend_refused",
                f"{message.content}: acknowledged, resent as it was, answered {attempt.status} {attempt.code}",
                of=message,
            )
    for attempt, given in message.answered_seqs():
        if given != seq:
            answer = f"{attempt.status} {attempt.code}".strip()
            report.note(
                "resend_seq_changed",
                f"{message.content}: acknowledged with seq {seq} at {clock(acknowledged_at)}, an answer at "
                f"{clock(attempt.ended)} ({answer}) gave seq {given}",
                of=message,
            )


def _check_refusal(
    report: Report,
    message: Message,
    rows: list[Row],
    dead: dict[str, list[Held]],
    in_broker: dict[str, list[Held]],
    seen: dict[str, list[tuple[Read, int]]],
) -> None:
    """A refusal promises nothing was stored: nothing refused may turn up anywhere."""
    if message.poison:
        return
    verdicts = [attempt.verdict for attempt, _, _ in message.attempts]
    refusals = ", ".join(f"{attempt.status} {attempt.code}".strip() for attempt, _, _ in message.attempts)
    if verdicts and all(verdict == "refused" for verdict in verdicts):
        places = [
            name
            for name, found in (
                ("stored", rows),
                ("dead-lettered", dead.get(message.content)),
                ("in the broker", in_broker.get(message.content)),
                ("seen by a read", seen.get(message.content)),
            )
            if found
        ]
        if places:
            report.note("refused_but_stored", f"{message.content} refused ({refusals}) yet {' and '.join(places)}", of=message)
        return
    if message.acknowledged and message.acknowledged[0].status == 200:
        earlier = [attempt for attempt, _, _ in message.attempts if attempt.ended < message.acknowledged[0].started]
        if earlier and all(attempt.verdict == "refused" for attempt in earlier):
            report.note(
                "refused_but_stored",
                f"{message.content} answered 200 (already known) after every earlier attempt was refused "
                f"({', '.join(f'{a.status} {a.code}' for a in earlier)})",
                of=message,
            )


def _check_seqs(
    report: Report,
    message: Message,
    rows: list[Row],
    seen: list[tuple[Read, int]],
    final_windows: dict[tuple[str, str], list[tuple[str, int]]],
) -> None:
    """One message, one seq: its acknowledgement's (or a write_indeterminate's), every read's, the
    final window's and PostgreSQL's."""
    sources: list[tuple[str, int]] = []
    if message.acknowledged:
        sources.append((f"acknowledged ({message.acknowledged[0].status})", message.acknowledged_seq))
    else:
        sources += [(f"{attempt.status} {attempt.code}", seq) for attempt, seq in message.answered_seqs()]
    sources += [(f"stored in {row.conversation}", row.seq) for row in rows]
    sources += [(f"read at {clock(read.started)} ({read.source})", seq) for read, seq in seen]
    window = dict(final_windows.get((message.tenant, message.conversation), []))
    for message_id in message.ids:
        if message_id in window:
            sources.append(("final window", window[message_id]))
    if len({seq for _, seq in sources}) > 1:
        distinct = {}
        for name, seq in sources:
            distinct.setdefault(seq, name)
        report.note(
            "seq_mismatch", f"{message.content}: " + ", ".join(f"seq {seq} {name}" for seq, name in distinct.items()), of=message
        )


def _seq_of(message: Message, rows: list[Row]) -> int | None:
    """The seq the message keeps: the one acknowledged (a stored one that differs is a
    ``seq_mismatch`` of its own, not a reason to count every later message as reordered), else the
    stored one, else the one a ``write_indeterminate`` gave."""
    if message.acknowledged:
        return message.acknowledged_seq
    if rows:
        return rows[0].seq
    given = message.answered_seqs()
    return given[0][1] if given else None


def _check_order(report: Report, messages: dict[str, Message], stored: dict[str, list[Row]]) -> None:
    """Real-time order: a message acknowledged before another's first attempt began has the smaller seq."""
    per_conversation: dict[tuple[str, str], list[tuple[Message, int]]] = defaultdict(list)
    for message in messages.values():
        seq = _seq_of(message, stored.get(message.content, []))
        if seq is not None and not message.poison:
            per_conversation[(message.tenant, message.conversation)].append((message, seq))
    for items in per_conversation.values():
        acknowledged = sorted((item for item in items if item[0].acknowledged), key=lambda item: item[0].acknowledged_at)
        ends = [item[0].acknowledged_at for item in acknowledged]
        highest_before = []  # the highest seq acknowledged up to each position, and its message
        highest: tuple[int, str] = (-1, "")
        for message, seq in acknowledged:
            highest = max(highest, (seq, message.content))
            highest_before.append(highest)
        for message, seq in items:
            position = bisect.bisect_left(ends, message.started)
            if position and highest_before[position - 1][0] >= seq:
                earlier_seq, earlier = highest_before[position - 1]
                report.note(
                    "reordered",
                    f"{message.content} (seq {seq}) after {earlier} (seq {earlier_seq}), acknowledged before it was sent",
                    of=message,
                )


def _check_lag(report: Report, messages: dict[str, Message], stored: dict[str, list[Row]]) -> None:
    lags = sorted(
        max(0.0, row.persisted_at - message.acknowledged_at)
        for message in messages.values()
        if message.acknowledged and not message.poison
        for row in stored.get(message.content, [])[:1]
    )
    if lags:
        report.lag_median_seconds = round(statistics.median(lags), 3)
        report.lag_p99_seconds = round(lags[min(len(lags) - 1, int(len(lags) * 0.99))], 3)
        report.lag_max_seconds = round(lags[-1], 3)


# A row is committed (persisted_at) a moment before the worker settles it into the cached list.
SETTLE_GRACE = 2.0
FINAL_WINDOW = 500  # messages of each conversation read back through the API at the end


def _check_final_windows(
    report: Report,
    rows: list[Row],
    final_windows: dict[tuple[str, str], list[tuple[str, int]]],
    unreadable: dict[tuple[str, str], str],
) -> None:
    stored: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        stored[(row.tenant, row.conversation)].append(row)
    for key, error in sorted(unreadable.items()):
        report.note("final_window_differs", f"{key}: the API did not serve the final window: {error}")
    for key in (set(stored) | set(final_windows)) - set(unreadable):
        expected = [(row.id, row.seq) for row in sorted(stored.get(key, []), key=lambda row: row.seq)][-FINAL_WINDOW:]
        window = final_windows.get(key, [])
        if window != expected:
            missing = len(set(expected) - set(window))
            extra = len(set(window) - set(expected))
            report.note(
                "final_window_differs",
                f"{key}: the API's window of {len(window)} differs from the newest {len(expected)} rows "
                f"({missing} rows missing from it, {extra} entries not among the rows)",
            )


def _check_reads(
    report: Report,
    history: History,
    messages: dict[str, Message],
    stored: dict[str, list[Row]],
    forgotten_at: list[float],
    unreachable: list[tuple[float, float]],
) -> None:
    def forgotten_between(start: float, end: float) -> bool:
        return any(start <= moment <= end for moment in forgotten_at)

    def written_while_unreachable(message: Message) -> bool:
        return any(message.started <= until and message.acknowledged_at >= since for since, until in unreachable)

    acked_by_conversation: dict[tuple[str, str], list[tuple[float, int, str, float, float]]] = defaultdict(list)
    for message in messages.values():
        if not message.acknowledged or message.poison:
            continue
        persisted = min((row.persisted_at for row in stored.get(message.content, [])), default=float("inf"))
        # Written while Redis did not answer: in cached reads only from its persistence on.
        visible = persisted + SETTLE_GRACE if written_while_unreachable(message) else message.acknowledged_at
        acked_by_conversation[(message.tenant, message.conversation)].append(
            (visible, message.acknowledged_seq, message.content, persisted, message.started)
        )
    reads_by_conversation: dict[tuple[str, str], list[Read]] = defaultdict(list)
    for read in history.reads:
        if not read.ok:
            continue
        report.reads += 1
        if read.source in ("cache", "rebuild"):
            report.reads_from_cache += 1
            reads_by_conversation[(read.tenant, read.conversation)].append(read)
            _check_read_your_writes(
                report, read, acked_by_conversation[(read.tenant, read.conversation)], forgotten_between, messages
            )
    for reads in reads_by_conversation.values():
        reads.sort(key=lambda read: read.started)
        for earlier, later in _ordered_pairs(reads):
            if forgotten_between(earlier.started, later.ended):
                continue
            later_contents = {content for _, _, content in later.messages}
            floor = later.messages[0][1] if len(later.messages) >= READ_LIMIT else -1
            for _, seq, content in earlier.messages:
                if seq >= floor and content not in later_contents:
                    report.note(
                        "vanished",
                        f"{content} (seq {seq}) seen at {clock(earlier.started)} ({earlier.source}), then missing from"
                        f" the window read at {clock(later.started)} ({later.source}, {len(later.messages)} messages"
                        f" from seq {later.messages[0][1] if later.messages else '-'})",
                        of=messages.get(content),
                    )


def _ordered_pairs(reads: list[Read]) -> list[tuple[Read, Read]]:
    """Each read with the next read that began after it ended (real-time order)."""
    pairs = []
    for index, earlier in enumerate(reads):
        later = next((read for read in reads[index + 1 :] if read.started > earlier.ended), None)
        if later is not None:
            pairs.append((earlier, later))
    return pairs


def _check_read_your_writes(
    report: Report,
    read: Read,
    acked: list[tuple[float, int, str, float, float]],
    forgotten_between: Any,
    messages: dict[str, Message],
) -> None:
    seen = {content for _, _, content in read.messages}
    floor = read.messages[0][1] if len(read.messages) >= READ_LIMIT else -1
    for visible, seq, content, persisted, started in acked:
        # Redis restarted after the write reached it (its first request began) and before the read
        # was served, and the row was not committed yet: only the broker held it.
        if forgotten_between(started, read.ended) and persisted > read.started:
            continue
        if visible < read.started and seq >= floor and content not in seen:
            report.note(
                "stale_reads",
                f"{content} (seq {seq}) acknowledged at {clock(visible)}, persisted at {clock(persisted)}, "
                f"missing from a read at {clock(read.started)} served from {read.source}",
                of=messages.get(content),
            )


def clock(moment: float) -> str:
    """A moment as the logs print it (HH:MM:SS.mmm, local time)."""
    import time

    if moment == float("inf"):
        return "never"
    return time.strftime("%H:%M:%S", time.localtime(moment)) + f".{int(moment % 1 * 1000):03d}"
