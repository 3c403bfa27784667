"""The pure parts of ranking: fusion of the two rankings and the spread to neighbouring turns."""

import pytest

from search import ranking


def test_convex_fusion_weighs_normalised_scores():
    scores = ranking.convex(vector={1: 0.9, 2: 0.5, 3: 0.1}, keyword={2: 10.0, 3: 5.0}, vector_weight=0.5)
    assert scores[1] == pytest.approx(0.5)  # best cosine, no keyword match
    assert scores[2] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert scores[3] == pytest.approx(0.0 + 0.5 * 0.5)


def test_a_long_tail_of_weak_keyword_matches_cannot_outrank_the_best_of_either_ranking():
    vector = {key: 0.2 for key in range(100)} | {1000: 0.8}
    keyword = {key: 0.7 for key in range(100)} | {2000: 12.0}  # a hundred turns matching only a name
    vector[2000] = 0.2
    best = [item.key for item in ranking.best(ranking.convex(vector=vector, keyword=keyword, vector_weight=0.5), top_k=2)]
    assert set(best) == {1000, 2000}


def test_convex_fusion_of_nothing_is_nothing_and_flat_scores_do_not_divide_by_zero():
    assert ranking.convex(vector={}, keyword={}, vector_weight=0.5) == {}
    assert ranking.convex(vector={1: 0.3, 2: 0.3}, keyword={}, vector_weight=0.5) == {1: 0.0, 2: 0.0}


def test_a_neighbour_gets_a_share_of_the_best_score_beside_it():
    scores = {1: 1.0, 2: 0.1, 5: 0.4}
    spread = ranking.spread(scores, {1: (2, 3), 5: (3,)}, 0.5)
    assert spread[2] == pytest.approx(0.1 + 0.5)
    assert spread[3] == pytest.approx(0.5)  # the better of its two neighbours, not their sum
    assert spread[1] == 1.0
    assert spread[5] == 0.4
    assert ranking.spread(scores, {1: (2,)}, 0.0) == scores


def test_reciprocal_rank_fusion_is_kept_for_the_store():
    fused = ranking.fuse(vector=[(1, 0.9), (2, 0.8)], keyword=[(2, 3.0)], top_k=2)
    assert [item.key for item in fused] == [2, 1]
