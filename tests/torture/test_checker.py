"""The checker finds each anomaly it counts: histories with one planted fault each."""

import pytest

from torture.checker import Row, check
from torture.workload import Append, History, Read


def append(content, *, seq, started, ended, outcome="ok", status=201, message_id=None, client=0):
    tenant, conversation = content.split("|")[:2]
    return Append(
        client=client,
        tenant=tenant,
        conversation=conversation,
        ids=[message_id or f"id-{content}"],
        contents=[content],
        started=started,
        ended=ended,
        outcome=outcome,
        status=status,
        seqs=[seq] if outcome == "ok" else [],
    )


def row(content, seq, *, tenant=None, conversation=None, persisted_at=10.0, message_id=None):
    owner, conv = content.split("|")[:2]
    return Row(tenant or owner, conversation or conv, message_id or f"id-{content}", seq, content, persisted_at)


def window(*rows):
    return [(item.id, item.seq) for item in rows]


A1, A2, A3 = "t0|c0|0|1", "t0|c0|0|2", "t0|c0|1|1"


def healthy():
    history = History(appends=[append(A1, seq=1, started=0, ended=1), append(A2, seq=2, started=2, ended=3)])
    rows = [row(A1, 1), row(A2, 2)]
    return history, rows, {("t0", "c0"): window(*rows)}


def test_a_clean_history_passes():
    history, rows, windows = healthy()
    report = check(history=history, rows=rows, final_windows=windows)
    assert report.ok
    assert (report.acknowledged, report.stored) == (2, 2)


def test_an_acknowledged_message_missing_from_postgresql_is_lost():
    history, rows, _ = healthy()
    report = check(history=history, rows=rows[:1], final_windows={("t0", "c0"): window(rows[0])})
    assert report.lost == 1
    assert not report.ok


def test_a_message_stored_twice_is_duplicated():
    history, rows, _ = healthy()
    rows.append(row(A2, 3, message_id="other-id"))
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)})
    assert report.duplicated == 1


def test_a_seq_other_than_the_acknowledged_one_is_reordered():
    history, rows, _ = healthy()
    rows[1] = row(A2, 7)
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)})
    assert report.reordered >= 1


def test_a_later_append_ordered_before_an_earlier_acknowledged_one_is_reordered():
    history = History(appends=[append(A1, seq=5, started=0, ended=1), append(A2, seq=3, started=2, ended=3)])
    rows = [row(A2, 3), row(A1, 5)]
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)})
    assert report.reordered == 1


def test_concurrent_appends_may_take_either_order():
    history = History(appends=[append(A1, seq=5, started=0, ended=3), append(A2, seq=3, started=1, ended=2)])
    rows = [row(A2, 3), row(A1, 5)]
    assert check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)}).ok


def test_a_cached_window_that_differs_from_postgresql_is_counted():
    history, rows, _ = healthy()
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(rows[1], rows[0])})
    assert report.seq_mismatch_cache == 1


def test_a_message_of_another_tenant_is_cross_tenant():
    history, rows, windows = healthy()
    history.reads.append(Read(0, "t1", "c0", started=4, ended=5, ok=True, source="cache", messages=[("id-x", 1, A1)]))
    report = check(history=history, rows=rows, final_windows=windows)
    assert report.cross_tenant == 1


def test_a_message_shown_then_hidden_by_a_later_read_has_vanished():
    history, rows, windows = healthy()
    history.reads += [
        Read(0, "t0", "c0", started=4, ended=5, ok=True, source="cache", messages=[(f"id-{A1}", 1, A1), (f"id-{A2}", 2, A2)]),
        Read(0, "t0", "c0", started=6, ended=7, ok=True, source="rebuild", messages=[(f"id-{A1}", 1, A1)]),
    ]
    report = check(history=history, rows=rows, final_windows=windows)
    assert report.vanished == 1
    assert report.stale_reads == 1  # A2 was acknowledged before the second read began


def test_reads_across_a_redis_that_restarted_empty_are_not_compared():
    history, rows, windows = healthy()
    rows[1] = row(A2, 2, persisted_at=10.0)
    history.reads += [
        Read(0, "t0", "c0", started=4, ended=5, ok=True, source="cache", messages=[(f"id-{A1}", 1, A1), (f"id-{A2}", 2, A2)]),
        Read(0, "t0", "c0", started=6, ended=7, ok=True, source="rebuild", messages=[(f"id-{A1}", 1, A1)]),
    ]
    assert check(history=history, rows=rows, final_windows=windows, forgotten_at=[5.5]).ok


def test_a_stored_message_nobody_sent_is_a_phantom_and_a_refused_one_too():
    history, rows, windows = healthy()
    history.appends.append(append(A3, seq=0, started=4, ended=5, outcome="fail", status=400))
    rows += [row(A3, 9), row("t0|c0|9|9", 10)]
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)})
    assert report.phantoms == 2


@pytest.mark.parametrize(("outcome", "status"), [("unknown", None), ("fail", 503)])
def test_unanswered_or_unconfirmed_appends_may_end_up_stored_without_failing_the_run(outcome, status):
    history, rows, _ = healthy()
    history.appends.append(append(A3, seq=0, started=4, ended=5, outcome=outcome, status=status))
    rows.append(row(A3, 9))
    report = check(history=history, rows=rows, final_windows={("t0", "c0"): window(*rows)})
    assert report.ok
    assert report.unknown_stored + report.failed_but_stored == 1


def test_a_write_made_while_redis_did_not_answer_is_expected_in_cached_reads_only_once_persisted():
    history, rows, windows = healthy()
    rows[1] = row(A2, 2, persisted_at=20.0)
    history.reads.append(Read(0, "t0", "c0", started=10, ended=11, ok=True, source="cache", messages=[(f"id-{A1}", 1, A1)]))
    assert check(history=history, rows=rows, final_windows=windows, unreachable=[(2.5, 4.0)]).ok
    assert check(history=history, rows=rows, final_windows=windows).stale_reads == 1
    history.reads.append(Read(0, "t0", "c0", started=30, ended=31, ok=True, source="cache", messages=[(f"id-{A1}", 1, A1)]))
    assert check(history=history, rows=rows, final_windows=windows, unreachable=[(2.5, 4.0)]).stale_reads == 1


def test_a_write_that_reached_redis_before_it_restarted_empty_is_not_expected_until_persisted():
    history = History(appends=[append(A1, seq=1, started=0, ended=1), append(A2, seq=2, started=2, ended=4)])
    rows = [row(A1, 1), row(A2, 2, persisted_at=9.0)]
    windows = {("t0", "c0"): window(*rows)}
    history.reads.append(Read(0, "t0", "c0", started=5, ended=6, ok=True, source="cache", messages=[(f"id-{A1}", 1, A1)]))
    # Redis restarted at 3: after A2's request began, before it was answered.
    assert check(history=history, rows=rows, final_windows=windows, forgotten_at=[3.0]).ok
    assert check(history=history, rows=rows, final_windows=windows).stale_reads == 1
