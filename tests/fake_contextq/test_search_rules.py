"""The fake's search rules on their own: BM25's documented properties (rare words count
more, repeats saturate, short documents beat long ones, title > tags > content, ties by
lower id) and the snippet window."""

from __future__ import annotations

import math

from fake_contextq.domain.search import SearchIndex, query_terms, snippet, tokenize


def index(*docs: tuple[int, str, str, tuple[str, ...]]) -> SearchIndex:
    made = SearchIndex()
    for doc_id, title, content, tags in docs:
        made.add(doc_id, title, content, tags)
    return made


def ids(found: list[tuple[int, float]]) -> list[int]:
    return [doc_id for doc_id, _ in found]


def test_terms_are_lowercased_words_and_a_query_keeps_each_once() -> None:
    assert tokenize("Vault-Key, v2_x!") == ["vault", "key", "v2_x"]
    assert query_terms("b A b a c") == ["b", "a", "c"]


def test_one_document_one_word_scores_the_bm25_idf() -> None:
    found = index((1, "", "vault", ())).top(["vault"], 10)
    assert ids(found) == [1]
    assert math.isclose(found[0][1], math.log(4 / 3))  # tf=1 at average length: idf alone


def test_a_repeated_word_scores_more_but_saturates() -> None:
    once = index((1, "", "vault", ())).top(["vault"], 1)[0][1]
    twice = index((1, "", "vault vault", ())).top(["vault"], 1)[0][1]
    assert math.isclose(twice / once, 2 * 2.2 / 3.2)  # tf (k1 + 1) / (tf + k1), k1 = 1.2


def test_the_rarer_word_counts_more() -> None:
    idx = index((1, "", "common", ()), (2, "", "common", ()), (3, "", "rare", ()))
    assert ids(idx.top(["common", "rare"], 3)) == [3, 1, 2]


def test_a_short_document_beats_a_long_one_with_the_same_match() -> None:
    idx = index((1, "", "vault filler filler filler", ()), (2, "", "vault", ()))
    found = idx.top(["vault"], 2)
    assert ids(found) == [2, 1]
    assert found[0][1] > found[1][1] > 0


def test_title_outweighs_tags_which_outweigh_content() -> None:
    idx = index((1, "", "vault", ()), (2, "", "", ("vault",)), (3, "vault", "", ()))
    assert ids(idx.top(["vault"], 3)) == [3, 2, 1]


def test_ties_go_to_the_lower_id_and_the_limit_holds() -> None:
    idx = index((5, "", "vault", ()), (2, "", "vault", ()), (9, "", "vault", ()))
    found = idx.top(["vault"], 2)
    assert ids(found) == [2, 5]
    assert found[0][1] == found[1][1]


def test_nothing_is_found_without_documents_terms_or_matches() -> None:
    assert SearchIndex().top(["vault"], 5) == []
    assert index((1, "", "vault", ())).top([], 5) == []
    assert index((1, "", "vault", ())).top(["absent"], 5) == []


def test_accept_filters_the_candidates() -> None:
    idx = index((1, "", "vault", ()), (2, "", "vault", ()))
    assert ids(idx.top(["vault"], 5, accept=lambda d: d != 1)) == [2]


def test_re_adding_replaces_and_removing_forgets() -> None:
    idx = index((1, "", "old words", ()), (2, "", "vault filler filler filler", ()))
    idx.add(1, "", "vault", ())
    assert len(idx) == 2
    assert idx.top(["old"], 5) == []
    idx.remove(2)
    idx.remove(2)  # removing twice is harmless
    assert len(idx) == 1
    found = idx.top(["vault"], 5)  # as if document 2 had never been: lengths forgotten too
    assert ids(found) == [1] and math.isclose(found[0][1], math.log(4 / 3))
    idx.remove(1)
    assert len(idx) == 0 and idx.top(["vault"], 5) == []
    idx.add(3, "", "vault", ())
    assert math.isclose(idx.top(["vault"], 5)[0][1], math.log(4 / 3))


# ----- snippets ----------------------------------------------------------------------------

TEXT = "alpha beta gamma delta epsilon zeta eta theta Vault iota kappa lambda mu"


def test_the_window_opens_at_a_word_a_little_before_the_match() -> None:
    assert snippet(TEXT, "t", ["vault"], 20) == "…theta Vault iota kap…"


def test_a_match_near_the_end_keeps_the_window_full() -> None:
    assert snippet("alpha beta gamma delta vault", "t", ["vault"], 20) == "…ta gamma delta vault"


def test_a_match_at_the_start_or_no_match_shows_the_beginning() -> None:
    assert snippet(TEXT, "t", ["alpha"], 20) == "alpha beta gamma del…"
    assert snippet(TEXT, "t", ["absent"], 20) == "alpha beta gamma del…"
    assert snippet(TEXT, "t", [], 20) == "alpha beta gamma del…"


def test_the_earliest_of_several_terms_is_shown() -> None:
    assert snippet(TEXT, "t", ["mu", "theta"], 20) == "…zeta eta theta Vault…"


def test_a_word_boundary_too_far_back_is_not_used() -> None:
    text = "a " + "b" * 40 + "vault " + "c" * 30
    assert snippet(text, "t", ["vault"], 20) == "…bbbbbvault ccccccccc…"


def test_short_content_is_shown_whole_with_whitespace_collapsed() -> None:
    assert snippet("a  b\n\tc ", "t", ["b"], 20) == "a b c"


def test_empty_content_shows_the_title_cut_to_the_width() -> None:
    assert snippet(" \n", "  The   long title  ", ["x"], 7) == "The lon"


def test_a_word_boundary_exactly_a_width_back_is_not_used() -> None:
    text = "a " + "b" * 19 + "vault " + "c" * 40
    assert snippet(text, "t", ["vault"], 20) == "…bbbbbvault ccccccccc…"


def test_a_window_starting_at_the_second_character_is_marked_cut() -> None:
    assert snippet("xxxxx vault " + "c" * 40, "t", ["vault"], 20) == "…xxxx vault ccccccccc…"


def test_a_document_matching_more_terms_adds_their_scores() -> None:
    idx = index((1, "", "vault key", ()), (2, "", "vault", ()), (3, "", "key", ()))
    found = dict(idx.top(["absent", "vault", "key"], 3))  # an unknown term skips only itself
    assert sorted(found) == [1, 2, 3]
    assert found[1] > found[2] and found[1] > found[3]


def test_lengths_are_measured_against_the_average() -> None:
    found = index((1, "", "vault", ()), (2, "", "vault", ())).top(["vault"], 2)
    assert all(math.isclose(score, math.log(1.2)) for _, score in found)  # df = n = 2


def test_tags_are_separate_words_and_the_separator_adds_no_term() -> None:
    # two tags index exactly as the one tag "vault key" would: each tag its own word, and
    # joining them adds nothing (no extra term, no longer document, no glued words)
    two = index((1, "", "", ("vault", "key")), (2, "", "other", ()))
    one = index((1, "", "", ("vault key",)), (2, "", "other", ()))
    for term in ("vault", "key"):
        assert two.top([term], 5) == one.top([term], 5)
        assert ids(two.top([term], 5)) == [1]
    assert two.top(["xx", "vaultkey", "vaultxx", "xxkey"], 5) == []
    # the tag words weigh 2 each: the document's length is 4, against "other" at 1
    alone = index((1, "", "", ("vault", "key")), (2, "", "vault", ())).top(["vault"], 2)
    single = index((1, "", "", ("vault key",)), (2, "", "vault", ())).top(["vault"], 2)
    assert alone == single
