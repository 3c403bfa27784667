"""The retrieval benchmark through the REST API (``benchmarks.retrieval.http``), end to end: a real
gunicorn and the write and derived Celery workers on the test database, a tiny pair of friends
stored through the API, waited for until searchable, searched and asked for its context; and the
command on a tiny LoCoMo file against that server, twice (the second run sends nothing)."""

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from benchmarks.retrieval import http
from benchmarks.retrieval.dataset import Dataset, Question, dataset_generate
from conversations.models import Conversation, Message
from tenants import services as tenant_services
from tests.faults import WebServer


@pytest.fixture(scope="module")
def web(worker_env: dict[str, str]) -> Iterator[WebServer]:
    server = WebServer(env=worker_env, name="retrieval-http", workers=1, threads=4)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def api_key(tenant: Any) -> str:
    return tenant_services.api_key_create(tenant=tenant, name="retrieval-http")[1]


def test_a_pair_stored_through_the_api_is_found_and_held_in_its_context(tenant, worker, derived_worker, web, api_key):
    (user,) = dataset_generate(users=1, seed=3, sessions=(2, 2), turns=(8, 10)).users
    turn = user.sessions[1].turns[3]
    probe = Question(text=turn.text, evidence=(turn.dia_id,), category="single-hop", answer="")  # asked in its own words
    dataset = Dataset("tiny", (replace(user, questions=(*user.questions[:5], probe)),))
    (user,) = dataset.users
    turns = sum(len(session.turns) for session in user.sessions)

    with http.Api(web.url, api_key) as api:
        api.check()
        report = http.evaluation_run(api=api, dataset=dataset, progress=False)
        assert http.user_store(api, user) is False  # stored already: nothing sent again
        found = http.search_figures(api, [(user, probe)], progress=False)
        hits = api.send("GET", f"users/{user.user_id}/search/", params={"q": probe.text, "top_k": 1}).data["results"]

    assert http.dialog_ids(user)[hits[0]["message_id"]] == turn.dia_id
    assert found.recall == {8: 1.0, 20: 1.0}  # the hits map back to their dialog ids
    assert found.no_evidence == 0.0
    assert report.questions == 6
    assert report.users_stored == 1
    assert report.statuses[user.user_id]["searchable"]
    assert report.statuses[user.user_id]["messages"] == turns
    assert 0.0 < report.search.recall[8] <= report.search.recall[20] <= 1.0
    assert report.search.no_evidence < 1.0
    assert 0 < report.search.median_ms <= report.search.p95_ms
    held = report.context
    assert held is not None
    assert held.max_tokens == 4000
    assert 0.0 < held.every <= held.any <= 1.0
    assert 0 < held.median_tokens <= 4000
    assert 0 < held.median_ms <= held.p95_ms
    assert set(held.every_by_category) == set(report.questions_by_category) == set(report.search.recall_by_category)

    # Stored as evaluate.user_ingest stores it: a conversation per session, the speakers as roles and names.
    conversations = Conversation.objects.for_tenant(tenant).filter(user_id=user.user_id)
    expected = [f"{user.user_id}-s{session.number}" for session in user.sessions] + [f"{user.user_id}-asking"]
    assert sorted(conversations.values_list("conversation_id", flat=True)) == sorted(expected)
    assert set(conversations.values_list("agent_id", flat=True)) == {"retrieval-eval"}
    assert Message.objects.for_tenant(tenant).count() == turns  # the re-run duplicated nothing
    first = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=f"{user.user_id}-s1").order_by("seq")
    session = user.sessions[0]
    assert [(m.content, m.metadata["name"]) for m in first] == [(t.text, t.speaker) for t in session.turns]
    assert {m.role for m in first if m.metadata["name"] == user.speakers[0]} == {"user"}
    assert {m.role for m in first if m.metadata["name"] == user.speakers[1]} == {"assistant"}
    assert [(m.created_at - session.date).total_seconds() for m in first] == [30.0 * i for i in range(len(session.turns))]

    table = http.report_markdown(report)
    search = report.search
    all_row = f"| all | 6 | {search.recall[8]:.3f} | {search.recall[20]:.3f} | {search.no_evidence:.1%} | {held.every:.1%} |"
    assert all_row in table


def _locomo_sample() -> dict[str, Any]:
    turns = [
        ("Ines", "I finally adopted a greyhound from the shelter, his name is Pilot."),
        ("Omar", "A greyhound! Do they need a lot of running?"),
        ("Ines", "Less than you think, he sleeps most of the day on the sofa."),
        ("Omar", "My sister is getting married in Porto next spring."),
    ]
    later = [
        ("Omar", "The wedding in Porto was lovely, we danced until three."),
        ("Ines", "Pilot chewed my new trainers while I was at work."),
        ("Omar", "Ha, greyhounds and shoes. Did you get new ones?"),
        ("Ines", "Not yet, I am training for the Lisbon half marathon in October."),
    ]
    return {
        "sample_id": "conv-tiny",
        "conversation": {
            "speaker_a": "Ines",
            "speaker_b": "Omar",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{n}", "text": t} for n, (s, t) in enumerate(turns, start=1)],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [{"speaker": s, "dia_id": f"D2:{n}", "text": t} for n, (s, t) in enumerate(later, start=1)],
        },
        "qa": [
            {"question": "What is the name of Ines's dog?", "answer": "Pilot", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Omar's sister get married?", "answer": "Porto", "evidence": ["D1:4", "D2:1"], "category": 1},
            {"question": "Which race is Ines training for?", "answer": "Lisbon half", "evidence": ["D2:4"], "category": 4},
            {"question": "What would Ines never do?", "answer": "", "evidence": [], "category": 5},  # not scored
        ],
    }


def test_the_command_measures_a_running_service_and_a_second_run_sends_nothing(
    tenant, worker, derived_worker, web, api_key, tmp_path, capsys
):
    path, figures = tmp_path / "locomo-tiny.json", tmp_path / "figures.json"
    path.write_text(json.dumps([_locomo_sample()]))
    command = ["--base-url", web.url, "--api-key", api_key, "--locomo-path", str(path), "--json", str(figures)]

    http.main(command)
    first = json.loads(figures.read_text())
    http.main([*command, "--context-tokens", "0"])
    second = json.loads(figures.read_text())

    printed = capsys.readouterr().out
    assert "Dataset locomo: 1 users, 8 turns, 3 questions" in printed
    assert "| single-hop | 2 |" in printed
    assert "| multi-hop | 1 |" in printed
    assert first["users_stored"] == 1
    assert second["users_stored"] == 0
    assert first["questions_by_category"] == {"single-hop": 2, "multi-hop": 1}
    assert first["search"]["recall"]["20"] == 1.0  # 8 turns: every one in the top 20
    assert first["search"] == {**second["search"], "median_ms": first["search"]["median_ms"], "p95_ms": first["search"]["p95_ms"]}
    assert first["context"]["any"] > 0.0
    assert second["context"] is None
    assert Message.objects.for_tenant(tenant).filter(conversation__user_id="locomo-conv-tiny").count() == 8


def test_the_command_says_what_to_do_without_a_service_or_a_key(tmp_path):
    with pytest.raises(SystemExit) as refused:
        http.main(["--base-url", "http://127.0.0.1:9", "--api-key", "nope", "--locomo-path", str(tmp_path / "missing.json")])
    assert "No LoCoMo file at" in str(refused.value)
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps([_locomo_sample()]))
    with pytest.raises(SystemExit) as refused:
        http.main(["--base-url", "http://127.0.0.1:9", "--api-key", "nope", "--locomo-path", str(path)])
    assert "Cannot reach the service at http://127.0.0.1:9" in str(refused.value)
