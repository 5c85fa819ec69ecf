"""Caveats told apart from an answer, one short reason each."""

from rag.trace.caveats import SHORT, split


def test_a_caveat_of_several_reasons_is_one_line_each_and_the_text_follows():
    answer = ("Caveat: the rewrite budget (2) was spent and only 1 relevant chunk(s) were found (2 wanted) "
              "and web search skipped: no web search configured.\n\nThe answer [1].")
    assert split(answer) == (["the rewrite budget (2) was spent",
                              "only 1 relevant chunk(s) were found (2 wanted)",
                              "web search skipped: no web search configured"], "The answer [1].")


def test_nested_caveats_are_lifted_out_and_said_once():
    answer = ("Caveat: 1 claim could not be verified (caveat: the rewrite budget (2) was spent and 1 claim "
              "could not be verified).\n\nBody")
    assert split(answer) == (["1 claim could not be verified", "the rewrite budget (2) was spent"], "Body")


def test_a_long_reason_is_cut_at_a_word_and_an_answer_without_caveat_is_whole():
    reasons, _ = split("Caveat: " + "evidence " * 30)
    assert len(reasons[0]) <= SHORT and reasons[0].endswith("…") and " " in reasons[0]
    assert split("Plain answer. Caveat: inside") == ([], "Plain answer. Caveat: inside")
    assert split(None) == ([], "")
