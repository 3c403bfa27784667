"""The checker: the history of the clients against what PostgreSQL and the cache hold at the end.

Counts (every one but ``unknown`` must be zero, DESIGN.md section 5):

* ``lost``: acknowledged messages (201/200) missing from PostgreSQL.
* ``duplicated``: a message stored more than once (by its unique content), or in two places.
* ``reordered``: a message whose stored seq differs from the seq its acknowledgement gave, or that
  is ordered before a message of the same conversation acknowledged before it was even sent.
* ``seq_mismatch_cache``: the final window served by the API (the cache, rebuilt if needed) differs
  from PostgreSQL's rows: other messages, other seqs or another order.
* ``vanished``: a message a read showed and a later read of the same conversation (both served from
  the cache) did not, although it was inside that later window.
* ``stale_reads``: a read served from the cache missing a message acknowledged before the read began
  (read-your-writes while Redis is up).
* ``phantoms``: a message seen that no client sent, or stored although its append was refused with
  a 4xx (``failed_but_stored`` counts the 503 answers whose message was stored anyway: a publish the
  broker confirmed too late; reported, not a loss).
* ``cross_tenant``: a message of one tenant seen by or stored for another.
* ``unknown``: appends with no answer (timeouts, dropped connections); ``unknown_stored`` of them
  were persisted. Indeterminate by nature: either outcome is allowed.

``max_lag_seconds`` is the longest time between an acknowledgement and the row's ``persisted_at``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from torture.workload import READ_LIMIT, History, tenant_of

MUST_BE_ZERO = (
    "lost",
    "duplicated",
    "reordered",
    "seq_mismatch_cache",
    "vanished",
    "stale_reads",
    "phantoms",
    "cross_tenant",
)


@dataclass
class Report:
    acknowledged: int = 0
    failed: int = 0
    unknown: int = 0
    unknown_stored: int = 0
    failed_but_stored: int = 0
    reads: int = 0
    reads_from_cache: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    seq_mismatch_cache: int = 0
    vanished: int = 0
    stale_reads: int = 0
    phantoms: int = 0
    cross_tenant: int = 0
    stored: int = 0
    max_lag_seconds: float = 0.0
    faults: list[str] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(getattr(self, name) == 0 for name in MUST_BE_ZERO)

    def note(self, kind: str, example: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        examples = self.examples.setdefault(kind, [])
        if len(examples) < 5:
            examples.append(example)

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


def check(
    *,
    history: History,
    rows: list[Row],
    final_windows: dict[tuple[str, str], list[tuple[str, int]]],
    forgotten_at: list[float] = (),
    unreachable: list[tuple[float, float]] = (),
) -> Report:
    """``forgotten_at``: when Redis restarted empty; ``unreachable``: when it did not answer (paused).
    Read-your-writes and "never shown then hidden" are promised while Redis is up and keeps what it
    holds (DESIGN.md 5.4 and 5.5): reads on both sides of a restart are not compared, and a message
    acknowledged before a restart, or while Redis did not answer (written through PostgreSQL's seq
    clock and the broker alone), is expected in cached reads once it is persisted."""
    report = Report()
    by_content: dict[str, list[Row]] = defaultdict(list)
    by_id: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_content[row.content].append(row)
        by_id[row.id].append(row)
    report.stored = len(rows)

    sent: dict[str, str] = {}  # content -> outcome of its append
    acknowledged: list[tuple[Any, str, str, int]] = []  # (append, id, content, seq answered)
    for append in history.appends:
        for index, (message_id, content) in enumerate(zip(append.ids, append.contents, strict=True)):
            sent[content] = append.outcome
            stored = by_content.get(content, [])
            if append.outcome == "ok":
                report.acknowledged += 1
                acknowledged.append((append, message_id, content, append.seqs[index]))
                if not stored:
                    report.note("lost", f"{content} (acknowledged with seq {append.seqs[index]})")
            elif append.outcome == "fail":
                report.failed += 1
                if stored and append.status == 503:
                    report.failed_but_stored += 1
                elif stored:
                    report.note("phantoms", f"{content} stored though refused with {append.status}")
            else:
                report.unknown += 1
                report.unknown_stored += bool(stored)

    for content, stored in by_content.items():
        if len(stored) > 1:
            report.note("duplicated", f"{content} stored {len(stored)} times")
        for row in stored:
            if content not in sent:
                report.note("phantoms", f"{content} stored, never sent")
            if tenant_of(content) != row.tenant:
                report.note("cross_tenant", f"{content} stored for {row.tenant}")
            elif not content.startswith(f"{row.tenant}|{row.conversation}|"):
                report.note("duplicated", f"{content} stored in {row.conversation}")

    _check_order(report, acknowledged, by_content)
    _check_lag(report, acknowledged, by_content)
    _check_final_windows(report, rows, final_windows)
    _check_reads(report, history, sent, acknowledged, list(forgotten_at), list(unreachable), by_content)
    return report


def _check_order(report: Report, acknowledged: list[tuple[Any, str, str, int]], by_content: dict[str, list[Row]]) -> None:
    per_conversation: dict[tuple[str, str], list[tuple[Any, int, str]]] = defaultdict(list)
    for append, _, content, answered in acknowledged:
        stored = by_content.get(content)
        if not stored:
            continue
        if stored[0].seq != answered:
            report.note("reordered", f"{content}: acknowledged with seq {answered}, stored with {stored[0].seq}")
        per_conversation[(append.tenant, append.conversation)].append((append, stored[0].seq, content))
    # Real-time order: a message acknowledged before another was sent must have the smaller seq.
    for operations in per_conversation.values():
        by_end = sorted(operations, key=lambda item: item[0].ended)
        ends = [item[0].ended for item in by_end]
        highest_before = []  # highest seq among the operations that ended up to each position
        highest = -1
        for item in by_end:
            highest = max(highest, item[1])
            highest_before.append((highest, item[2]))
        for append, seq, content in operations:
            position = bisect.bisect_left(ends, append.started)
            if position and highest_before[position - 1][0] >= seq:
                report.note(
                    "reordered", f"{content} (seq {seq}) after {highest_before[position - 1][1]}, acknowledged before it was sent"
                )


def _check_lag(report: Report, acknowledged: list[tuple[Any, str, str, int]], by_content: dict[str, list[Row]]) -> None:
    for append, _, content, _ in acknowledged:
        for row in by_content.get(content, []):
            report.max_lag_seconds = max(report.max_lag_seconds, row.persisted_at - append.ended)
    report.max_lag_seconds = round(report.max_lag_seconds, 3)


# A row is committed (persisted_at) a moment before the worker settles it into the cached list.
SETTLE_GRACE = 2.0
FINAL_WINDOW = 500  # messages of each conversation read back through the API at the end


def _check_final_windows(report: Report, rows: list[Row], final_windows: dict[tuple[str, str], list[tuple[str, int]]]) -> None:
    stored: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        stored[(row.tenant, row.conversation)].append(row)
    for key in set(stored) | set(final_windows):
        expected = [(row.id, row.seq) for row in sorted(stored.get(key, []), key=lambda row: row.seq)][-FINAL_WINDOW:]
        window = final_windows.get(key, [])
        if window != expected:
            report.note(
                "seq_mismatch_cache", f"{key}: the API's window of {len(window)} differs from the newest {len(expected)} rows"
            )


def _check_reads(
    report: Report,
    history: History,
    sent: dict[str, str],
    acknowledged: list[tuple[Any, str, str, int]],
    forgotten_at: list[float],
    unreachable: list[tuple[float, float]],
    by_content: dict[str, list[Row]],
) -> None:
    def forgotten_between(start: float, end: float) -> bool:
        return any(start <= moment <= end for moment in forgotten_at)

    def written_while_unreachable(append: Any) -> bool:
        return any(append.started <= until and append.ended >= since for since, until in unreachable)

    acked_by_conversation: dict[tuple[str, str], list[tuple[float, int, str]]] = defaultdict(list)
    for append, message_id, content, seq in acknowledged:
        persisted = min((row.persisted_at for row in by_content.get(content, [])), default=float("inf"))
        # Written while Redis did not answer: in cached reads only from its persistence on.
        visible = persisted + SETTLE_GRACE if written_while_unreachable(append) else append.ended
        acked_by_conversation[(append.tenant, append.conversation)].append((visible, seq, message_id, persisted, append.started))
    reads_by_conversation: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for read in history.reads:
        if not read.ok:
            continue
        report.reads += 1
        for _, _, content in read.messages:
            if tenant_of(content) != read.tenant:
                report.note("cross_tenant", f"{content} seen by {read.tenant}")
            elif content not in sent:
                report.note("phantoms", f"{content} seen, never sent")
        if read.source in ("cache", "rebuild"):
            report.reads_from_cache += 1
            reads_by_conversation[(read.tenant, read.conversation)].append(read)
            _check_read_your_writes(report, read, acked_by_conversation[(read.tenant, read.conversation)], forgotten_between)
    for reads in reads_by_conversation.values():
        reads.sort(key=lambda read: read.started)
        for earlier, later in _ordered_pairs(reads):
            if forgotten_between(earlier.started, later.ended):
                continue
            later_ids = {message_id for message_id, _, _ in later.messages}
            floor = later.messages[0][1] if len(later.messages) >= READ_LIMIT else -1
            for message_id, seq, content in earlier.messages:
                if seq >= floor and message_id not in later_ids:
                    report.note("vanished", f"{content} (seq {seq}) seen, then missing from a later window")


def _ordered_pairs(reads: list[Any]) -> list[tuple[Any, Any]]:
    """Each read with the next read that began after it ended (real-time order)."""
    pairs = []
    for index, earlier in enumerate(reads):
        later = next((read for read in reads[index + 1 :] if read.started > earlier.ended), None)
        if later is not None:
            pairs.append((earlier, later))
    return pairs


def _check_read_your_writes(
    report: Report, read: Any, acked: list[tuple[float, int, str, float, float]], forgotten_between: Any
) -> None:
    seen = {message_id for message_id, _, _ in read.messages}
    floor = read.messages[0][1] if len(read.messages) >= READ_LIMIT else -1
    for ended, seq, message_id, persisted, started in acked:
        # Redis restarted after the write reached it (its request began) and before the read was
        # served, and the row was not committed yet: only the broker held it.
        if forgotten_between(started, read.ended) and persisted > read.started:
            continue
        if ended < read.started and seq >= floor and message_id not in seen:
            report.note(
                "stale_reads",
                f"{message_id} (seq {seq}) acknowledged at {_clock(ended)}, persisted at {_clock(persisted)}, "
                f"missing from a read at {_clock(read.started)} served from {read.source}",
            )


def _clock(moment: float) -> str:
    import time

    if moment == float("inf"):
        return "never"
    return time.strftime("%H:%M:%S", time.localtime(moment)) + f".{int(moment % 1 * 1000):03d}"
