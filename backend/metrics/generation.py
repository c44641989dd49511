"""Generated presuppositions and corrections, scored per item: unigram F1 and sentence BLEU.

Unigram F1 is the CREPE paper's writing metric (token overlap after SQuAD normalisation, best over the
gold references); BLEU is sacreBLEU's `sentence_bleu` (Post 2018; 13a tokenisation, exp smoothing)
against every reference. The Side by side page averages them over items with bootstrap intervals.
"""

from __future__ import annotations

import numpy as np
import sacrebleu

from backend.metrics.squad import token_f1


def unigram_f1(outputs: list[str], golds: list[list[str]]) -> np.ndarray:
    """Per item, the best unigram F1 against that item's references; NaN for an item without any.

    >>> unigram_f1(["sun is a star", "x"], [["the moon", "The sun is a star."], []]).tolist()
    [1.0, nan]
    """
    return np.array([token_f1(o, g) if g else np.nan for o, g in zip(outputs, golds)], dtype=float)


def sentence_bleu(outputs: list[str], golds: list[list[str]]) -> np.ndarray:
    """Per item, sacreBLEU's sentence BLEU (0-100) against all of that item's references; NaN without any.

    >>> sentence_bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]).round(6).tolist()
    [100.0]
    """
    return np.array([sacrebleu.sentence_bleu(o, g).score if g else np.nan for o, g in zip(outputs, golds)], dtype=float)
