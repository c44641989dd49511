"""Short-answer QA: SQuAD-style normalisation, exact match and token F1, best over acceptable answers.

Follows the official SQuAD v1.1 evaluation script (Rajpurkar et al. 2016): lower-case, remove
punctuation, remove the articles a/an/the, collapse whitespace. IfQA uses the same metrics.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _given(prediction: str | None) -> str:
    """A missing prediction (None, or NaN where a store's NULL answer reached a DataFrame) is the empty answer."""
    return prediction if isinstance(prediction, str) else ""


def exact_match(prediction: str | None, answers: list[str]) -> float:
    """1.0 if the normalised prediction equals any normalised acceptable answer.

    >>> exact_match("the Beatles", ["Beatles", "The Fab Four"])
    1.0
    """
    guess = normalize_answer(_given(prediction))
    return float(any(guess == normalize_answer(a) for a in answers))


def _f1(prediction: str, answer: str) -> float:
    guess, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    common = sum((Counter(guess) & Counter(gold)).values())
    if not guess or not gold:
        return float(guess == gold)
    if common == 0:
        return 0.0
    precision, recall = common / len(guess), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str | None, answers: list[str]) -> float:
    """Best token-overlap F1 of the prediction against any acceptable answer.

    >>> round(token_f1("4 hours", ["4", "four hours"]), 3)
    0.667
    """
    return max((_f1(_given(prediction), a) for a in answers), default=0.0)
