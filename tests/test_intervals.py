"""Intervals that are intervals (issue 54, item 6): a proportion gets Wilson's interval at any n (a bootstrap of 0 of 5
gave [0, 0], of always-E's 1.000 gave [1, 1]); other figures below a minimum n say "too few to estimate"; one
participant's answers get no interval as if they were people's; gold labels by construction get no whiskers."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from backend.analysis import projection
from backend.metrics import bootstrap, classification, gradient


def test_a_proportion_gets_wilson_s_interval_however_small_or_extreme():
    for right, n in ((0, 5), (5, 5), (3, 5), (2386, 2386), (0, 1)):
        got = classification.accuracy(["E"] * n, ["E"] * right + ["N"] * (n - right))
        wilson = stats.binomtest(right, n).proportion_ci(method="wilson")
        assert (got.low, got.high, got.n) == (wilson.low, wilson.high, n)
        assert got.high - got.low > 0  # never a point shown as an interval
    assert classification.accuracy(["E"] * 5, ["N"] * 5).ci() == "95% CI [0.0, 43.4]"


def test_a_figure_that_is_not_a_proportion_says_when_it_has_too_few_items():
    few = classification.macro_f1(["E", "N", "C"], ["E", "N", "N"], ["E", "N", "C"])
    assert np.isnan(few.low) and few.ci() == "too few items to estimate an interval (under 10)"
    enough = bootstrap.mean(np.linspace(0, 1, bootstrap.MIN_N))
    assert enough.low < enough.value < enough.high


def test_one_participant_s_answers_have_no_interval_as_if_they_were_people_s():
    one = pd.DataFrame({"rater": ["p1"] * 5, "item": range(5), "value": [0.8] * 5})
    assert np.isnan(gradient.crossed_mean(one).low) and gradient.crossed_mean(one).value == 0.8
    table = gradient.per_predicate(one.assign(predicate="c1"))
    assert table["low"].isna().all() and table.loc[0, "participants"] == 1


def test_gold_labels_by_construction_have_no_whiskers_and_people_keep_theirs(real_con):
    table = projection.human_table(real_con)
    gold = table["judged_by"] == projection.BY_CONSTRUCTION
    assert gold.any() and (~gold).any()
    assert table.loc[gold, ["human_low", "human_high"]].isna().all().all()
    people = table[~gold]
    none = people["human_low"].isna()
    assert (people.loc[~none, "human_high"] > people.loc[~none, "human_low"]).all()
    # PROPRES again × question: 9 items whose crowd shares are not all 0 or 1, too few for a bootstrap
    assert none.sum() == 1 and (people.loc[none, "n"] < bootstrap.MIN_N).all()


def test_explore_says_a_slice_of_few_items_is_too_few_for_an_interval(open_page, real_store):
    at = open_page(real_store, "pages/explore.py", {"dataset": "nope", "run_a": "nope/BOW/mnli/0", "q": "headlights"})
    captions = [c.value.replace("\\", "") for c in at.caption]  # (Markdown's escapes)
    assert not at.exception and "too few items to estimate an interval (under 10) · n=2" in captions, captions
    assert any(c.startswith("95% CI [") for c in captions)  # the slice's accuracy: Wilson's, at any n
    assert not any("nan" in c for c in captions)
