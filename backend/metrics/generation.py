"""Generated presuppositions and corrections: unigram F1 and sacreBLEU.

Unigram F1 is the CREPE paper's writing metric (token overlap after SQuAD normalisation, best over
the gold references); BLEU is sacreBLEU's corpus BLEU (Post 2018) with its signature reported, so
numbers are comparable across papers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sacrebleu

from backend.metrics.bootstrap import Estimate, mean
from backend.metrics.squad import token_f1


@dataclass(frozen=True)
class Bleu:
    score: float  # 0-100
    signature: str
    n: int


def unigram_f1(predictions: list[str], references: list[list[str]], ci: bool = True) -> Estimate:
    """Mean over items of the best unigram F1 against that item's references.

    >>> unigram_f1(["the sun is a star"], [["The sun is a star."]], ci=False).value
    1.0
    """
    return mean(np.array([token_f1(p, refs) for p, refs in zip(predictions, references)]), ci=ci)


def bleu(predictions: list[str], references: list[list[str]]) -> Bleu:
    """Corpus BLEU with sacreBLEU defaults (13a tokenisation, exp smoothing); references may differ in number.

    >>> round(bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]).score, 6)
    100.0
    """
    width = max((len(refs) for refs in references), default=0)
    streams = [[refs[i] if i < len(refs) else "" for refs in references] for i in range(width)]
    metric = sacrebleu.metrics.BLEU()
    result = metric.corpus_score(list(predictions), streams)
    return Bleu(float(result.score), str(metric.get_signature()), len(predictions))
