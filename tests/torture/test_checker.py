"""The checker finds each anomaly it counts: hand-written histories with one planted fault each, and
the same histories without it, which pass."""

import httpx
import pytest

from torture.checker import MUST_BE_ZERO, Held, Row, check, clock, held_messages
from torture.workload import Append, Attempt, History, Read, read_answer

A1, A2, A3 = "t0|c0|0|1", "t0|c0|0|2", "t0|c0|1|1"
POISON = "t0|c0|2|1|poison:nul-in-content"


def message_id(content):
    return f"id-{content}"


def attempt(contents, seqs=None, *, at=(0, 1), status=201, code="", sent_ids=True, malformed=""):
    ids = [message_id(content) for content in contents]
    answered = []
    if seqs is not None and (status in (200, 201) or code == "write_indeterminate"):
        answered = list(zip(ids, seqs, strict=True))
    return Attempt(
        started=at[0],
        ended=at[1],
        ids=ids if sent_ids else [None] * len(ids),
        status=status,
        code=code,
        answered=answered,
        malformed=malformed,
    )


def append(*contents, seqs=None, at=(0, 1), status=201, code="", kind="client-id", poison=None, attempts=None):
    """One append of ``contents`` answered once (or over ``attempts``)."""
    tenant, conversation = contents[0].split("|")[:2]
    operation = Append(
        client=0,
        tenant=tenant,
        conversation=conversation,
        contents=list(contents),
        ids=[message_id(content) for content in contents],
        kind=kind,
        poison=poison or [],
    )
    operation.attempts = attempts or [attempt(contents, seqs, at=at, status=status, code=code)]
    return operation


def resend(original, *, at, status=200, seqs=None, code=""):
    seqs = seqs if seqs is not None else [seq for _, seq in original.acknowledgement.answered]
    operation = append(*original.contents, seqs=seqs, at=at, status=status, code=code, kind="resend")
    operation.original = original
    return operation


def row(content, seq, *, tenant=None, conversation=None, persisted_at=10.0, identifier=None):
    owner, conv = content.split("|")[:2]
    return Row(
        tenant or owner,
        conv if conversation is None else conversation,
        identifier or message_id(content),
        seq,
        content,
        persisted_at,
    )


def held(content, seq):
    tenant, conversation = content.split("|")[:2]
    return Held(tenant, conversation, message_id(content), seq, content)


def window(*rows):
    return [(item.id, item.seq) for item in sorted(rows, key=lambda item: item.seq)]


def read(*shown, started, ended, tenant="t0", source="cache"):
    """A read of t0/c0 showing (content, seq) pairs."""
    return Read(
        0,
        tenant,
        "c0",
        started=started,
        ended=ended,
        ok=True,
        source=source,
        messages=[(message_id(content), seq, content) for content, seq in shown],
    )


def healthy():
    history = History(appends=[append(A1, seqs=[1], at=(0, 1)), append(A2, seqs=[2], at=(2, 3))])
    rows = [row(A1, 1), row(A2, 2)]
    return history, rows, {("t0", "c0"): window(*rows)}


def run(history, rows, windows=None, **options):
    return check(
        history=history, rows=rows, final_windows=windows if windows is not None else {("t0", "c0"): window(*rows)}, **options
    )


def only(report, *names):
    """The counts that must be zero and are not: exactly ``names``."""
    return {name for name in MUST_BE_ZERO if getattr(report, name)} == set(names)


# --- A clean history -------------------------------------------------------------------------------


def test_a_clean_history_passes():
    history, rows, windows = healthy()
    report = run(history, rows, windows)
    assert report.ok
    assert (report.acknowledged, report.stored) == (2, 2)


def test_what_the_contract_allows_passes_together():
    """Resends answered 200 with their seqs, an in-flight retry after a timeout, a write_indeterminate
    resent and acknowledged with the same seq, refusals of messages never stored, a poison refused."""
    first = append(A1, seqs=[1], at=(0, 1))
    in_flight = append(
        A2,
        attempts=[
            attempt([A2], at=(2, 2.5), status=None),  # timed out
            attempt([A2], [2], at=(2.6, 3), status=503, code="write_indeterminate"),
            attempt([A2], [2], at=(3.5, 4), status=200),
        ],
        kind="in-flight",
    )
    refused = append(A3, at=(5, 6), status=503, code="broker_unavailable")
    poison = append(POISON, at=(5, 6), status=400, code="validation_error", kind="poison", poison=["nul-in-content"])
    history = History(appends=[first, in_flight, refused, poison, resend(first, at=(7, 8))])
    history.reads.append(read((A1, 1), (A2, 2), started=4.5, ended=4.6))
    rows = [row(A1, 1), row(A2, 2)]
    report = run(history, rows)
    assert report.ok, report.examples
    assert (report.acknowledged, report.refused, report.resends, report.indeterminate) == (2, 1, 1, 1)
    assert (report.poison_sent, report.poison_refused) == (1, 1)


# --- Durability ----------------------------------------------------------------------------------


def test_an_acknowledged_message_that_is_nowhere_is_lost():
    history, rows, _ = healthy()
    report = run(history, rows[:1])
    assert report.lost == 1
    assert only(report, "lost")


def test_an_acknowledged_message_still_in_the_broker_after_the_drain_is_stuck_not_lost():
    history, rows, _ = healthy()
    report = run(history, rows[:1], leftovers=[held(A2, 2)])
    assert report.stuck == 1
    assert only(report, "stuck")


def test_an_acknowledged_message_not_persisted_while_the_broker_could_not_be_read_is_stuck():
    history, rows, _ = healthy()
    assert only(run(history, rows[:1], leftovers=None), "stuck")


def test_any_message_left_in_the_broker_is_stuck_even_if_stored():
    history, rows, windows = healthy()
    report = run(history, rows, windows, leftovers=[held(A1, 1)])
    assert report.stuck == 1
    assert report.in_broker_after_drain == 1


def test_a_well_formed_message_in_the_dead_letter_table_is_dead_lettered_not_lost():
    history, rows, _ = healthy()
    report = run(history, rows[:1], dead_letters=[held(A2, 2)])
    assert report.dead_lettered == 1
    assert only(report, "dead_lettered")


# --- Duplicates, order, seqs --------------------------------------------------------------------


def test_a_message_stored_twice_is_duplicated():
    history, rows, _ = healthy()
    rows.append(row(A2, 3, identifier="other-id"))
    report = run(history, rows)
    assert report.duplicated == 1


def test_a_message_a_read_shows_twice_is_duplicated_once_however_many_reads_show_it():
    history, rows, windows = healthy()
    history.reads += [read((A1, 1), (A2, 2), (A2, 2), started=4, ended=5), read((A1, 1), (A2, 2), (A2, 2), started=6, ended=7)]
    report = run(history, rows, windows)
    assert report.duplicated == 1
    assert only(report, "duplicated")


def test_a_later_append_ordered_before_an_earlier_acknowledged_one_is_reordered():
    history = History(appends=[append(A1, seqs=[5], at=(0, 1)), append(A2, seqs=[3], at=(2, 3))])
    rows = [row(A2, 3), row(A1, 5)]
    report = run(history, rows)
    assert report.reordered == 1
    assert only(report, "reordered")


def test_order_counts_from_the_first_attempt_of_an_in_flight_retry():
    """A2's first attempt began before A1 was acknowledged: either order is allowed."""
    in_flight = append(A2, attempts=[attempt([A2], at=(0.5, 1.5), status=None), attempt([A2], [3], at=(2, 3))])
    history = History(appends=[append(A1, seqs=[5], at=(0, 1)), in_flight])
    rows = [row(A2, 3), row(A1, 5)]
    assert run(history, rows).ok
    late = append(A2, attempts=[attempt([A2], at=(1.5, 1.8), status=None), attempt([A2], [3], at=(2, 3))])
    assert only(run(History(appends=[append(A1, seqs=[5], at=(0, 1)), late]), rows), "reordered")


def test_concurrent_appends_may_take_either_order():
    history = History(appends=[append(A1, seqs=[5], at=(0, 3)), append(A2, seqs=[3], at=(1, 2))])
    rows = [row(A2, 3), row(A1, 5)]
    assert run(history, rows).ok


def test_a_stored_seq_other_than_the_acknowledged_one_is_a_seq_mismatch():
    history, rows, _ = healthy()
    rows[1] = row(A2, 7)
    report = run(history, rows)
    assert report.seq_mismatch == 1
    assert only(report, "seq_mismatch")


def test_a_read_showing_another_seq_than_the_acknowledged_and_stored_one_is_a_seq_mismatch():
    history, rows, windows = healthy()
    history.reads.append(read((A1, 1), (A2, 4), started=4, ended=5))
    report = run(history, rows, windows)
    assert report.seq_mismatch == 1
    assert only(report, "seq_mismatch")


def test_an_unacknowledged_message_stored_with_another_seq_than_its_write_indeterminate_gave_is_a_seq_mismatch():
    history, rows, _ = healthy()
    history.appends.append(append(A3, seqs=[8], at=(4, 5), status=503, code="write_indeterminate"))
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.seq_mismatch == 1
    assert report.unknown_stored == 1
    rows[-1] = row(A3, 8)
    assert run(history, rows).ok


def test_a_cached_window_that_differs_from_postgresql_is_counted():
    history, rows, _ = healthy()
    report = run(history, rows, {("t0", "c0"): [(rows[1].id, 2), (rows[0].id, 1)]})
    assert report.final_window_differs == 1


def test_a_final_window_the_api_would_not_serve_is_counted():
    history, rows, windows = healthy()
    report = run(history, rows, {}, unreadable_windows={("t0", "c0"): "500 Internal Server Error"})
    assert report.final_window_differs == 1
    assert only(report, "final_window_differs")


# --- Resends ---------------------------------------------------------------------------------------


def test_a_resend_of_an_acknowledged_message_answered_201_is_counted():
    history, rows, windows = healthy()
    history.appends.append(resend(history.appends[0], at=(5, 6), status=201))
    report = run(history, rows, windows)
    assert report.resend_answered_201 == 1
    assert only(report, "resend_answered_201")
    assert report.by_client_kind["resend_answered_201"] == {"client-id": 1}  # the kind that first sent it


def test_a_retry_whose_earlier_attempt_timed_out_may_answer_201():
    in_flight = append(A2, attempts=[attempt([A2], at=(2, 2.3), status=None), attempt([A2], [2], at=(2.4, 3), status=201)])
    history = History(appends=[append(A1, seqs=[1], at=(0, 1)), in_flight])
    assert run(history, [row(A1, 1), row(A2, 2)]).ok


def test_a_resend_of_an_acknowledged_message_refused_with_a_4xx_is_counted():
    history, rows, windows = healthy()
    history.appends.append(resend(history.appends[0], at=(5, 6), status=409, code="conflict"))
    report = run(history, rows, windows)
    assert report.resend_refused == 1
    assert only(report, "resend_refused")


def test_a_resend_answered_503_while_the_service_cannot_tell_is_allowed():
    history, rows, windows = healthy()
    history.appends.append(resend(history.appends[0], at=(5, 6), status=503, code="idempotency_unknown"))
    report = run(history, rows, windows)
    assert report.ok
    assert report.idempotency_unknown == 1


def test_an_answer_that_gives_an_acknowledged_message_another_seq_is_counted():
    history, rows, windows = healthy()
    history.appends.append(resend(history.appends[0], at=(5, 6), status=200, seqs=[9]))
    report = run(history, rows, windows)
    assert report.resend_seq_changed == 1
    assert only(report, "resend_seq_changed")
    assert report.examples["resend_seq_changed"] == [
        f"{A1}: acknowledged with seq 1 at {clock(1)}, an answer at {clock(6)} (200) gave seq 9"
    ]


def test_a_write_indeterminate_whose_resend_is_acknowledged_with_another_seq_is_counted():
    chain = append(
        A3,
        attempts=[attempt([A3], [5], at=(4, 5), status=503, code="write_indeterminate"), attempt([A3], [7], at=(5.5, 6))],
    )
    history, rows, _ = healthy()
    history.appends.append(chain)
    rows.append(row(A3, 7))
    report = run(history, rows)
    assert report.resend_seq_changed == 1
    assert only(report, "resend_seq_changed")


# --- Refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (503, "broker_unavailable"),
        (503, "idempotency_unknown"),
        (503, "conversation_busy"),
        (503, "backends_unavailable"),
        (400, "validation_error"),
        (409, "conflict"),
    ],
)
def test_a_refused_message_that_is_stored_is_refused_but_stored(status, code):
    history, rows, _ = healthy()
    history.appends.append(append(A3, at=(4, 5), status=status, code=code))
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.refused_but_stored == 1
    assert only(report, "refused_but_stored")


@pytest.mark.parametrize("where", ["dead_letters", "leftovers", "reads"])
def test_a_refused_message_found_anywhere_else_is_refused_but_stored(where):
    history, rows, windows = healthy()
    history.appends.append(append(A3, at=(4, 5), status=503, code="broker_unavailable"))
    options = {}
    if where == "reads":
        history.reads.append(read((A1, 1), (A2, 2), (A3, 9), started=6, ended=7))
    else:
        options[where] = [held(A3, 9)]
    assert run(history, rows, windows, **options).refused_but_stored == 1


def test_a_200_after_only_refused_attempts_means_a_refusal_stored_the_message():
    chain = append(
        A3,
        attempts=[attempt([A3], at=(4, 5), status=503, code="broker_unavailable"), attempt([A3], [9], at=(6, 7), status=200)],
    )
    history, rows, _ = healthy()
    history.appends.append(chain)
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.refused_but_stored == 1
    assert only(report, "refused_but_stored")


def test_a_refusal_after_an_unanswered_attempt_may_end_up_stored():
    chain = append(
        A3, attempts=[attempt([A3], at=(4, 4.5), status=None), attempt([A3], at=(4.6, 5), status=503, code="broker_unavailable")]
    )
    history, rows, _ = healthy()
    history.appends.append(chain)
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.ok
    assert (report.unknown, report.unknown_stored) == (1, 1)


@pytest.mark.parametrize(("status", "code"), [(None, ""), (500, "error"), (503, "write_indeterminate")])
def test_unanswered_or_indeterminate_appends_may_end_up_stored_without_failing_the_run(status, code):
    history, rows, _ = healthy()
    history.appends.append(append(A3, seqs=[9], at=(4, 5), status=status, code=code))
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.ok
    assert report.unknown_stored == 1


# --- Poison ------------------------------------------------------------------------------------


def poison_append(status=400, seq=None):
    return append(POISON, seqs=None if seq is None else [seq], at=(4, 5), status=status, kind="poison", poison=["nul-in-content"])


def test_a_poison_acknowledged_is_counted():
    history, rows, windows = healthy()
    history.appends.append(poison_append(status=201, seq=9))
    report = run(history, rows, windows)
    assert report.poison_acknowledged == 1
    assert only(report, "poison_acknowledged")


def test_a_poison_answered_500_is_a_server_error_and_one_answered_503_or_not_at_all_is_not():
    history, rows, windows = healthy()
    history.appends.append(poison_append(status=500))
    report = run(history, rows, windows)
    assert report.poison_server_error == 1
    assert only(report, "poison_server_error")
    assert report.poison_answers == {"nul-in-content": {"500": 1}}
    for status in (503, None):
        history.appends[-1] = poison_append(status=status)
        report = run(history, rows, windows)
        assert report.ok
        assert report.poison_unrefused == 1


@pytest.mark.parametrize("where", ["rows", "dead_letters", "reads"])
def test_a_poison_stored_dead_lettered_or_seen_is_poison_stored(where):
    history, rows, windows = healthy()
    history.appends.append(poison_append(status=400))
    options = {}
    if where == "rows":
        rows = [*rows, row(POISON, 9)]
        windows = {("t0", "c0"): window(*rows)}
    elif where == "reads":
        history.reads.append(read((A1, 1), (A2, 2), (POISON, 9), started=6, ended=7))
    else:
        options[where] = [held(POISON, 9)]
    report = run(history, rows, windows, **options)
    assert report.poison_stored == 1
    assert only(report, "poison_stored")


def test_a_poison_stored_with_its_content_altered_is_still_found_by_its_id():
    history, rows, _ = healthy()
    history.appends.append(poison_append(status=400))
    rows.append(Row("t0", "c0", message_id(POISON), 9, "t0|c0|2|1|poison:nul-in-content|", 10.0))
    report = run(history, rows)
    assert report.poison_stored == 1
    assert report.phantoms == 0


def test_a_well_formed_message_refused_with_its_poison_batch_but_stored_is_refused_but_stored():
    history, rows, _ = healthy()
    batch = append(A3, POISON, at=(4, 5), status=400, kind="poison", poison=["", "nul-in-content"])
    history.appends.append(batch)
    rows.append(row(A3, 9))
    report = run(history, rows)
    assert report.refused_but_stored == 1
    assert report.poison_stored == 0


# --- Answers' shape ------------------------------------------------------------------------------


def response(status, body, headers=None):
    return httpx.Response(status, json=body, headers=headers or {})


def test_answers_are_read_by_the_contract():
    operation = append(A1, attempts=[])
    refused = attempt([A1], status=503)
    read_answer(
        refused,
        operation,
        response(503, {"error": {"code": "broker_unavailable", "message": "", "details": {}}}, {"Retry-After": "5"}),
    )
    assert refused.verdict == "refused"
    assert not refused.malformed
    maybe = attempt([A1], status=503)
    details = {"messages": [{"id": message_id(A1), "seq": 4}]}
    body = {"error": {"code": "write_indeterminate", "message": "", "details": details}}
    read_answer(maybe, operation, response(503, body, {"Retry-After": "1"}))
    assert maybe.verdict == "indeterminate"
    assert maybe.answered == [(message_id(A1), 4)]
    ok = attempt([A1], status=201)
    read_answer(ok, operation, response(201, {"messages": [{"id": message_id(A1), "seq": 4, "content": A1}]}))
    assert ok.verdict == "ok"
    assert ok.answered == [(message_id(A1), 4)]


@pytest.mark.parametrize(
    ("status", "body", "headers"),
    [
        (503, {"error": {"code": "broker_unavailable", "message": "", "details": {}}}, {}),  # no Retry-After
        (503, {"detail": "unavailable"}, {"Retry-After": "5"}),  # no JSON error
        (503, {"error": {"code": "write_indeterminate", "message": "", "details": {}}}, {"Retry-After": "5"}),  # no ids
        (201, {"messages": [{"id": "someone-else", "seq": 4, "content": A1}]}, {}),  # not the id sent
        (201, {"messages": [{"id": message_id(A1), "content": A1}]}, {}),  # no seq
    ],
)
def test_an_answer_that_breaks_the_contracts_shape_is_malformed(status, body, headers):
    operation = append(A1, attempts=[])
    answer = attempt([A1], status=status)
    read_answer(answer, operation, response(status, body, headers))
    assert answer.malformed
    operation.attempts = [answer]
    history, rows, windows = healthy()
    history.appends.append(operation)
    assert run(history, rows, windows).malformed_answers == 1


# --- Reads ---------------------------------------------------------------------------------------


def test_a_message_of_another_tenant_is_cross_tenant():
    history, rows, windows = healthy()
    history.reads.append(Read(0, "t1", "c0", started=4, ended=5, ok=True, source="cache", messages=[("id-x", 1, A1)]))
    report = run(history, rows, windows)
    assert report.cross_tenant == 1


def test_a_message_shown_then_hidden_by_a_later_read_has_vanished():
    history, rows, windows = healthy()
    history.reads += [read((A1, 1), (A2, 2), started=4, ended=5), read((A1, 1), started=6, ended=7, source="rebuild")]
    report = run(history, rows, windows)
    assert report.vanished == 1
    assert report.stale_reads == 1  # A2 was acknowledged before the second read began


def test_reads_across_a_redis_that_restarted_empty_are_not_compared():
    history, rows, windows = healthy()
    history.reads += [read((A1, 1), (A2, 2), started=4, ended=5), read((A1, 1), started=6, ended=7, source="rebuild")]
    assert run(history, rows, windows, forgotten_at=[5.5]).ok


def test_a_stored_message_nobody_sent_is_a_phantom_and_so_is_one_seen():
    history, rows, _ = healthy()
    rows.append(row("t0|c0|9|9", 10))
    history.reads.append(read((A1, 1), (A2, 2), ("t0|c0|9|8", 11), started=4, ended=5))
    report = run(history, rows)
    assert report.phantoms == 2
    assert only(report, "phantoms")


def test_a_write_made_while_redis_did_not_answer_is_expected_in_cached_reads_only_once_persisted():
    history, rows, windows = healthy()
    rows[1] = row(A2, 2, persisted_at=20.0)
    history.reads.append(read((A1, 1), started=10, ended=11))
    assert run(history, rows, windows, unreachable=[(2.5, 4.0)]).ok
    assert run(history, rows, windows).stale_reads == 1
    history.reads.append(read((A1, 1), started=30, ended=31))
    assert run(history, rows, windows, unreachable=[(2.5, 4.0)]).stale_reads == 1


def test_a_write_that_reached_redis_before_it_restarted_empty_is_not_expected_until_persisted():
    history = History(appends=[append(A1, seqs=[1], at=(0, 1)), append(A2, seqs=[2], at=(2, 4))])
    rows = [row(A1, 1), row(A2, 2, persisted_at=9.0)]
    history.reads.append(read((A1, 1), started=5, ended=6))
    # Redis restarted at 3: after A2's request began, before it was answered.
    assert run(history, rows, forgotten_at=[3.0]).ok
    assert run(history, rows).stale_reads == 1


# --- Figures and helpers ---------------------------------------------------------------------------


def test_the_lag_from_acknowledgement_to_row_is_summarised():
    history = History(appends=[append(f"t0|c0|0|{n}", seqs=[n], at=(n, n + 1)) for n in range(1, 101)])
    rows = [row(f"t0|c0|0|{n}", n, persisted_at=n + 1 + (50 if n == 100 else 0.5)) for n in range(1, 101)]
    report = run(history, rows)
    assert report.ok
    assert (report.lag_median_seconds, report.lag_p99_seconds, report.lag_max_seconds) == (0.5, 50.0, 50.0)


def test_the_messages_of_a_persist_task_are_found_wherever_they_nest():
    payload = {"tenant_slug": "t0", "conversation_id": "c0", "messages": [{"id": "m1", "seq": 3, "content": A1}]}
    task_arguments = [[[payload, dict(payload, messages=[{"id": "m2", "seq": 4, "content": A2}])]], {}, {}]
    assert held_messages(task_arguments) == [Held("t0", "c0", "m2", 4, A2), Held("t0", "c0", "m1", 3, A1)]
    assert held_messages({"tenant_id": 1, "payload": "not a task"}) == []
