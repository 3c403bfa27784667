"""The retrieval dataset keeps its promises: reproducible, shaped like LoCoMo, labels that point at
the right turns, paraphrases that share few words, rare entities said once; and LoCoMo's own file
loads into the same shape."""

import json
import re
import statistics
from datetime import timedelta

import pytest

from benchmarks.retrieval.dataset import CATEGORIES, content_words, dataset_generate
from benchmarks.retrieval.locomo import LocomoMissing, locomo_load


@pytest.fixture(scope="module")
def dataset():
    return dataset_generate(users=4, seed=7)


def test_the_same_seed_gives_the_same_conversations_and_fewer_users_are_a_prefix():
    assert dataset_generate(users=2, seed=7) == dataset_generate(users=2, seed=7)
    assert dataset_generate(users=1, seed=7).users[0] == dataset_generate(users=3, seed=7).users[0]
    assert dataset_generate(users=1, seed=8).users[0] != dataset_generate(users=1, seed=7).users[0]


def test_each_pair_talks_over_twenty_to_thirty_sessions_weeks_apart_of_fifteen_to_thirty_turns(dataset):
    for user in dataset.users:
        assert 20 <= len(user.sessions) <= 30
        for number, session in enumerate(user.sessions, start=1):
            assert session.number == number
            assert 15 <= len(session.turns) <= 30
            assert [turn.dia_id for turn in session.turns] == [f"D{number}:{index}" for index in range(1, len(session.turns) + 1)]
            assert {turn.speaker for turn in session.turns} == set(user.speakers)
            assert all(first.speaker != second.speaker for first, second in zip(session.turns, session.turns[1:], strict=False))
        gaps = [later.date - earlier.date for earlier, later in zip(user.sessions, user.sessions[1:], strict=False)]
        assert min(gaps) >= timedelta(days=5)
    assert len({user.user_id for user in dataset.users}) == len(dataset.users)


def test_every_category_is_asked_and_every_evidence_id_names_a_turn(dataset):
    for user in dataset.users:
        turns = user.turns()
        assert {question.category for question in user.questions} == set(CATEGORIES)
        for question in user.questions:
            assert question.evidence
            assert all(dialog_id in turns for dialog_id in question.evidence)
            assert len(question.evidence) >= 2 if question.category == "multi-hop" else len(question.evidence) <= 2


def test_a_question_about_one_person_is_answered_by_what_that_person_said(dataset):
    checked = 0
    for user in dataset.users:
        turns = user.turns()
        for question in user.questions:
            named = [speaker for speaker in user.speakers if re.search(rf"\b{speaker}\b", question.text)]
            if len(named) != 1:
                continue
            checked += 1
            assert all(turns[dialog_id].speaker == named[0] for dialog_id in question.evidence), question
            assert not any(re.search(rf"\b{named[0]}\b", turns[dialog_id].text) for dialog_id in question.evidence)
    assert checked > 300


def test_paraphrased_questions_share_few_words_with_their_evidence(dataset):
    shared: dict[str, list[int]] = {category: [] for category in CATEGORIES}
    for user in dataset.users:
        turns = user.turns()
        for question in user.questions:
            evidence = set().union(*(content_words(turns[dialog_id].text) for dialog_id in question.evidence))
            shared[question.category].append(len(content_words(question.text, ignore=user.speakers) & evidence))
    assert max(shared["paraphrase"]) <= 2  # at most a place name
    assert statistics.mean(shared["paraphrase"]) < 0.5
    assert statistics.mean(shared["single-hop"]) > 3 * statistics.mean(shared["paraphrase"])


def test_a_rare_entity_question_names_something_said_in_its_evidence_turn_only(dataset):
    for user in dataset.users:
        turns = user.turns()
        texts = [turn.text for turn in turns.values()]
        for question in (q for q in user.questions if q.category == "rare-entity"):
            candidates = [word for word in re.findall(r"\b[A-Z][a-z]{5,}\b", question.text) if word not in user.speakers]
            rare = [word for word in candidates if sum(word in text for text in texts) == 1]
            assert rare, question
            assert all(any(word in turns[dialog_id].text for dialog_id in question.evidence) for word in rare)


def test_temporal_answers_are_dates_worked_out_from_the_session(dataset):
    temporal = [question for user in dataset.users for question in user.questions if question.category == "temporal"]
    assert temporal
    assert all(re.fullmatch(r"\d{1,2} [A-Z][a-z]+ 20\d\d", question.answer) for question in temporal)


LOCOMO_SAMPLE = [
    {
        "sample_id": "conv-26",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's great!", "blip_caption": "a photo of a sunset"},
            ],
            "session_2_date_time": "1:14 pm on 25 May, 2023",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "I ran a charity race last Saturday."}],
        },
        "qa": [
            {
                "question": "When did Caroline go to the support group?",
                "answer": "7 May 2023",
                "evidence": ["D1:1"],
                "category": 2,
            },
            {"question": "What did Melanie share?", "answer": "a sunset", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "What did Caroline adopt?", "answer": "none", "evidence": ["D1:1"], "category": 5},
            {"question": "Where is the proof?", "answer": "x", "evidence": ["D9:9"], "category": 4},
        ],
    }
]


def test_locomo_loads_into_the_same_shape_without_adversarial_or_dangling_questions(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(LOCOMO_SAMPLE))

    dataset = locomo_load(path=path)

    (user,) = dataset.users
    assert user.user_id == "locomo-conv-26"
    assert user.speakers == ("Caroline", "Melanie")
    assert [session.date.isoformat() for session in user.sessions] == ["2023-05-08T13:56:00+00:00", "2023-05-25T13:14:00+00:00"]
    assert user.turns()["D1:2"].text == "That's great! [shares a photo of a sunset]"
    assert [(question.category, question.evidence) for question in user.questions] == [
        ("temporal", ("D1:1",)),
        ("multi-hop", ("D1:2", "D2:1")),
    ]


def test_a_missing_locomo_file_says_where_it_looked(tmp_path):
    with pytest.raises(LocomoMissing, match="locomo-path"):
        locomo_load(path=tmp_path / "absent.json")
