"""Metric functions against reference implementations (scikit-learn, scipy) and hand-computed fixtures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import binomtest
from sklearn import metrics as sk

from backend.metrics import bootstrap, classification, generation, pairs, retrieval, squad
from backend.metrics import nope_paper as nope
from backend.metrics.facets import by_facet, macro_f1_of

RNG = np.random.default_rng(7)
LABELS = ["E", "N", "C"]
GOLD = RNG.choice(LABELS, 300, p=[0.6, 0.3, 0.1])
PRED = np.where(RNG.random(300) < 0.7, GOLD, RNG.choice(LABELS, 300))


def test_accuracy_matches_sklearn():
    assert classification.accuracy(GOLD, PRED, ci=False).value == pytest.approx(sk.accuracy_score(GOLD, PRED))


def test_per_class_and_macro_f1_match_sklearn():
    table = classification.per_class(GOLD, PRED, LABELS)
    p, r, f, s = sk.precision_recall_fscore_support(GOLD, PRED, labels=LABELS, zero_division=0)
    assert (
        np.allclose(table[["precision", "recall", "f1"]].to_numpy().T, [p, r, f])
        and table["support"].tolist() == s.tolist()
    )
    assert classification.macro_f1(GOLD, PRED, LABELS, ci=False).value == pytest.approx(
        sk.f1_score(GOLD, PRED, average="macro")
    )


def test_perfect_detector_scores_one_not_the_crepe_scorers_half():
    gold = ["FP", "N", "N", "FP"]
    assert classification.macro_f1(gold, gold, ["FP", "N"], ci=False).value == 1.0


def test_confusion_matches_sklearn():
    table = classification.confusion(GOLD, PRED, LABELS)
    assert (table.to_numpy() == sk.confusion_matrix(GOLD, PRED, labels=LABELS)).all()


def test_response_bias_finds_always_yes():
    bias = classification.response_bias(["FP", "N", "N", "N"], ["FP"] * 4, ["FP", "N"])
    assert bias.set_index("label").loc["FP"].tolist() == [0.25, 1.0]


@pytest.mark.parametrize(
    "prediction, answers, em, f1",
    [
        ("The Beatles", ["beatles"], 1.0, 1.0),
        ("4 hours", ["4", "four hours"], 0.0, 2 / 3),
        ("Barack Obama.", ["Obama", "Barack Hussein Obama"], 0.0, 0.8),
        ("", ["Paris"], 0.0, 0.0),
        (None, ["Paris"], 0.0, 0.0),
        (float("nan"), ["Paris"], 0.0, 0.0),  # a store's NULL answer as a DataFrame gives it (crashed the Overview)
        ("an apple", ["apple"], 1.0, 1.0),
    ],
)
def test_squad_em_and_f1(prediction, answers, em, f1):
    assert squad.exact_match(prediction, answers) == em
    assert squad.token_f1(prediction, answers) == pytest.approx(f1)


def test_sentence_bleu_is_sacrebleus_and_unigram_f1_takes_the_best_reference():
    import sacrebleu

    outputs = ["the cat is on the mat", "there is a dog", "nothing"]
    golds = [["the cat sat on the mat", "a cat is on the mat"], ["a dog is there"], []]
    scores = generation.sentence_bleu(outputs, golds)
    assert scores[:2].tolist() == pytest.approx(
        [sacrebleu.sentence_bleu(o, g).score for o, g in zip(outputs, golds[:2])]
    )
    assert np.isnan(scores[2])
    assert generation.unigram_f1(["sun is a star"], [["the moon", "the sun is a star"]]).tolist() == [1.0]


def test_recall_and_mrr():
    ranks = [retrieval.first_gold_rank(r, g) for r, g in [(["a", "b"], {"b"}), (["c", "d"], {"x"}), (["e"], {"e"})]]
    assert ranks == [2, None, 1]
    assert retrieval.recall_at_k(ranks, 1, ci=False).value == pytest.approx(1 / 3)
    assert retrieval.recall_at_k(ranks, 2, ci=False).value == pytest.approx(2 / 3)
    assert retrieval.mrr(ranks, ci=False).value == pytest.approx((0.5 + 0 + 1) / 3)


def test_pair_summary_and_mcnemar():
    gold_a, gold_b = ["E"] * 6, ["E", "E", "N", "N", "N", "N"]
    pred_a, pred_b = ["E", "E", "E", "E", "N", "N"], ["E", "N", "E", "N", "N", "E"]
    s = pairs.summarise(gold_a, pred_a, gold_b, pred_b, ci=False)
    assert s.table.to_numpy().tolist() == [[2, 2], [1, 1]]
    assert s.pair_accuracy.value == pytest.approx(2 / 6) and s.flip_rate.value == pytest.approx(3 / 6)
    assert s.gold_flip_rate == pytest.approx(4 / 6)
    assert s.mcnemar_p == pytest.approx(binomtest(2, 3, 0.5).pvalue)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    values = (RNG.random(500) < 0.3).astype(float)
    first, again = bootstrap.mean(values), bootstrap.mean(values)
    assert first == again
    assert first.low < first.value < first.high and first.n == 500
    assert 0.03 < first.high - first.low < 0.12  # ~ ±1.96·sqrt(.3·.7/500) = ±0.04


def test_shared_resampling_matches_one_at_a_time():
    matrix = (RNG.random((3, 200)) < 0.5).astype(float)
    assert bootstrap.means(matrix) == [bootstrap.mean(row) for row in matrix]


def test_paired_difference_detects_a_real_gap_and_not_a_null_one():
    a = (RNG.random(400) < 0.8).astype(float)
    b = (RNG.random(400) < 0.6).astype(float)
    assert bootstrap.paired_difference(a, b).p_value < 0.01
    assert bootstrap.paired_difference(a, a.copy()).p_value == 1.0


def test_macro_f1_interval_contains_point():
    est = classification.macro_f1(GOLD, PRED, LABELS)
    assert est.low <= est.value <= est.high


def test_by_facet_breaks_any_metric_down():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "hop": ["single"] * 4 + ["multi"] * 2,
            "gold_label": ["FP", "N"] * 3,
            "label": ["FP", "N", "N", "N", "FP", "FP"],
        }
    )
    table = by_facet(frame, ["hop"], macro_f1_of(["FP", "N"])).set_index("hop")
    assert table.loc["single", "value"] == pytest.approx(
        sk.f1_score(["FP", "N", "FP", "N"], ["FP", "N", "N", "N"], average="macro")
    )
    assert table.loc["multi", "n"] == 2


def test_jensen_shannon_matches_scipy():
    p, q = RNG.dirichlet(np.ones(3), 20), RNG.dirichlet(np.ones(3), 20)
    assert np.allclose(nope.jensen_shannon(p, q), jensenshannon(p, q, axis=1, base=2) ** 2)


def test_expected_calibration_error_is_zero_when_calibrated():
    probs = np.array([[0.75, 0.25, 0]] * 4)
    assert nope.expected_calibration_error(probs, np.array([0, 0, 0, 1])) == pytest.approx(0.0)


def test_large_slices_are_scored_from_label_cells_like_items():
    """Above bootstrap.LARGE_N items the intervals come from multinomial draws over kinds of items (no
    R × n matrix: a million items would need 8 GB); per-cell counts give the same values as per item."""
    import numpy as np
    import pandas as pd

    from backend.analysis.slicing import _summary_of_cells
    from backend.metrics import bootstrap, classification

    rng = np.random.default_rng(1)
    labels = ["E", "N", "C"]
    gold = rng.choice(labels, 30_000, p=[0.6, 0.3, 0.1]).astype(object)
    pred = np.where(rng.random(30_000) < 0.7, gold, rng.choice(labels, 30_000)).astype(object)
    assert gold.size > bootstrap.LARGE_N
    cells = (
        pd.DataFrame({"gold_label": gold, "label_a": pred, "label_b": None})
        .groupby(["gold_label", "label_a"], as_index=False)
        .size()
        .rename(columns={"size": "n"})
        .assign(label_b=None)
    )
    summary = _summary_of_cells(cells, labels, with_b=False)
    by_item = classification.accuracy(gold, pred), classification.macro_f1(gold, pred, labels)
    for estimate, item in zip((summary.accuracy, summary.macro_f1), by_item):
        assert estimate.value == pytest.approx(item.value, abs=1e-12) and estimate.n == item.n == 30_000
        assert abs(estimate.low - item.low) < 0.005 and abs(estimate.high - item.high) < 0.005
        assert estimate.low < estimate.value < estimate.high and estimate.high - estimate.low < 0.03
    assert summary.confusion.to_numpy().sum() == 30_000
    assert summary.confusion.equals(classification.confusion(list(gold), list(pred), labels))
