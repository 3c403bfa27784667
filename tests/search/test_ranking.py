"""The pure parts of ranking: the fusion of the two rankings, the conversation's standing, the speaker
a question names, the share given to neighbouring turns; and what a search reads in its question."""

from datetime import UTC, datetime

import numpy as np
import pytest

from search import ranking
from search.query import read_query


def rows(
    similarity: list[float],
    keyword: list[float],
    *,
    conversations: list[int] | None = None,
    seqs: list[int] | None = None,
    created: list[float] | None = None,
    speakers: list[str] | None = None,
    candidate: list[bool] | None = None,
) -> ranking.Rows:
    size = len(similarity)
    return ranking.Rows(
        keys=np.arange(1, size + 1, dtype=np.int64),
        conversations=np.array(conversations or [1] * size, dtype=np.int64),
        seqs=np.array(seqs or list(range(1, size + 1)), dtype=np.int64),
        created=np.array(created or [0.0] * size, dtype=np.float64),
        speakers=np.array(speakers or [""] * size, dtype=object),
        similarity=np.array(similarity, dtype=np.float64),
        keyword=np.array(keyword, dtype=np.float64),
        candidate=np.array(candidate if candidate is not None else [True] * size),
    )


def weights(
    vector: float = 0.5, session: float = 0.0, speaker: float = 0.0, neighbour: float = 0.0, date: float = 0.0
) -> ranking.Weights:
    return ranking.Weights(vector=vector, session=session, speaker=speaker, neighbour=neighbour, date=date)


def test_convex_fusion_weighs_normalised_scores():
    scores = ranking.convex(rows([0.9, 0.5, 0.1], [0.0, 10.0, 5.0]), 0.5)
    assert scores[0] == pytest.approx(0.5)  # best cosine, no keyword match
    assert scores[1] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert scores[2] == pytest.approx(0.0 + 0.5 * 0.5)


def test_a_keyword_hit_without_a_vector_counts_as_the_lowest_cosine():
    scores = ranking.convex(rows([0.9, 0.1, float("nan")], [0.0, 0.0, 4.0]), 0.5)
    assert scores.tolist() == pytest.approx([0.5, 0.0, 0.5])


def test_a_long_tail_of_weak_keyword_matches_cannot_outrank_the_best_of_either_ranking():
    similarity = [0.2] * 100 + [0.8, 0.2]
    keyword = [0.7] * 100 + [0.0, 12.0]  # a hundred turns matching only a name
    table = rows(similarity, keyword)
    best = [item.key for item in ranking.top(table, ranking.fused(table, weights()), 2)]
    assert set(best) == {101, 102}


def test_fusion_of_nothing_is_nothing_and_flat_scores_do_not_divide_by_zero():
    assert ranking.convex(rows([], []), 0.5).tolist() == []
    assert ranking.convex(rows([0.3, 0.3], [0.0, 0.0]), 0.5).tolist() == [0.0, 0.0]
    flat = rows([0.3], [0.0])
    # A candidate scoring 0 is still found.
    assert [item.key for item in ranking.top(flat, ranking.fused(flat, weights()), 5)] == [1]


def test_rows_no_ranker_put_forward_score_nothing_of_their_own():
    table = rows([0.9, 0.5, 0.1], [0.0, 0.0, 0.0], candidate=[True, True, False])
    assert ranking.convex(table, 0.5)[2] == 0.0
    assert [item.key for item in ranking.top(table, ranking.fused(table, weights()), 5)] == [1, 2]


def test_a_neighbour_gets_a_share_of_the_better_score_beside_it_within_its_conversation_only():
    table = rows([1.0, 0.0, 0.0, 0.0, 0.0], [0.0] * 5, conversations=[1, 1, 1, 2, 2], seqs=[1, 2, 3, 1, 2])
    base = np.array([1.0, 0.1, 0.0, 0.0, 0.4])
    spread = ranking.beside(table, base, 0.5)
    assert spread.tolist() == pytest.approx([1.0 + 0.05, 0.1 + 0.5, 0.05, 0.2, 0.4])
    assert ranking.beside(table, base, 0.0) is base


def test_neighbours_follow_the_seq_not_the_order_of_the_rows():
    table = rows([0.0] * 3, [0.0] * 3, seqs=[9, 2, 5])  # newest first, as the vectors come
    spread = ranking.beside(table, np.array([0.0, 1.0, 0.0]), 0.5)
    assert spread.tolist() == pytest.approx([0.0, 1.0, 0.5])  # seq 2's neighbour is seq 5, not seq 9


def test_the_conversation_of_the_best_turn_lifts_its_other_turns():
    table = rows([0.9, 0.5, 0.52], [0.0, 0.0, 0.0], conversations=[1, 1, 2])
    plain = ranking.fused(table, weights(vector=1.0))
    lifted = ranking.fused(table, weights(vector=1.0, session=0.2))
    assert plain[2] > plain[1]
    assert lifted[1] > lifted[2]  # beside the best turn, in the conversation that holds it
    assert lifted[0] == pytest.approx(plain[0] + 0.2)


def test_the_turns_of_a_named_speaker_are_raised_and_only_candidates():
    table = rows([0.9, 0.8, 0.1], [0.0, 0.0, 0.0], speakers=["Ann", "Bob", "Bob"], candidate=[True, True, False])
    scores = ranking.fused(table, weights(vector=1.0, speaker=0.3), named=frozenset({"Bob"}))
    assert scores.tolist() == pytest.approx([1.0, 0.0 + 0.3, 0.0])  # cosines normalised over the candidates


def test_a_question_naming_a_speaker_is_ranked_without_the_name():
    read = read_query("What did Caroline's brother research?", speakers={"Caroline", "Melanie"})
    assert read.speakers == {"Caroline"}
    assert read.text == "What did brother research?"


@pytest.mark.parametrize(
    ("question", "speakers", "named", "text"),
    [
        ("what did caroline research", {"Caroline"}, {"Caroline"}, "what did research"),  # all lower case: any case
        ("What may Ann do?", {"May", "Ann"}, {"Ann"}, "What may do?"),  # as written once it has capitals
        ("will you call may", {"Will", "May"}, {"Will", "May"}, "you call"),
        ("Where does Jo Ann live?", {"Jo Ann", "Jo"}, {"Jo Ann"}, "Where does live?"),  # the longer name first
        ("When did Sam Lee move?", {"Sam Lee"}, {"Sam Lee"}, "When did move?"),
        ("When did Sam move?", {"Sam Lee"}, {"Sam Lee"}, "When did move?"),  # a first name names the speaker
        ("Samantha's dog?", {"Sam"}, set(), "Samantha's dog?"),  # whole words only
        ("What did the assistant say?", {"assistant", "user"}, set(), "What did the assistant say?"),  # roles are not names
        ("Caroline?", {"Caroline"}, {"Caroline"}, "Caroline?"),  # nothing else left: the name stays
    ],
)
def test_what_names_a_speaker(question, speakers, named, text):
    read = read_query(question, speakers=speakers)
    assert (set(read.speakers), read.text) == (named, text)


def test_reciprocal_rank_fusion_is_kept_for_the_store():
    fused = ranking.fuse(vector=[(1, 0.9), (2, 0.8)], keyword=[(2, 3.0)], top_k=2)
    assert [item.key for item in fused] == [2, 1]


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("question", "windows"),
    [
        ("What did Ann paint on October 13, 2023?", [("2023-10-13", "2023-10-24")]),
        ("What did Ann find on 1 February, 2023?", [("2023-02-01", "2023-02-12")]),
        ("And on the 3rd of May 2022?", [("2022-05-03", "2022-05-14")]),
        ("Since 2023-10-13?", [("2023-10-13", "2023-10-24")]),
        ("What setback came in October 2023?", [("2023-10-01", "2023-11-11")]),
        ("In December 2022 or Sept. 2021?", [("2022-12-01", "2023-01-11"), ("2021-09-01", "2021-10-11")]),
        ("How many times in 2023?", [("2023-01-01", "2024-01-11")]),
        ("When did she go camping in June?", []),  # which June is not the question's to say
        ("Order 2023-A, room 2023b, 12023 points", []),
    ],
)
def test_dates_with_their_year_are_windows_that_run_ten_days_past_them(question, windows):
    assert read_query(question, speakers=()).windows == tuple((day(start), day(end)) for start, end in windows)


def test_the_turns_said_within_a_date_the_question_gives_are_raised_and_only_candidates():
    times = [day("2023-10-12"), day("2023-10-14"), day("2023-10-30"), day("2023-10-15")]
    table = rows([0.9, 0.8, 0.8, 0.1], [0.0] * 4, created=times, candidate=[True, True, True, False])
    scores = ranking.fused(table, weights(vector=1.0, date=0.3), windows=((day("2023-10-13"), day("2023-10-24")),))
    assert scores.tolist() == pytest.approx([1.0, 0.0 + 0.3, 0.0, 0.0])
