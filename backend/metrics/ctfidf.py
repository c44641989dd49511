"""Naming clusters of short texts by their most distinctive words: class-based TF-IDF (Grootendorst 2022,
"BERTopic: Neural topic modeling with a class-based TF-IDF procedure", eq. 1): each cluster's texts are
one document; a word's weight in cluster c is tf(word, c) · log(1 + A / f(word)), with A the mean number
of words per cluster and f(word) its count over all clusters. Counting is scikit-learn's CountVectorizer
(English stop words removed)."""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer


def distinctive_words(texts_by_cluster: list[list[str]], top: int = 3) -> list[list[str]]:
    """The `top` words with the highest c-TF-IDF weight in each cluster (fewer where a cluster has fewer).

    >>> distinctive_words([["the answer is correct", "correct and complete"], ["it is wrong", "wrong date"]], 1)
    [['correct'], ['wrong']]
    """
    documents = [" ".join(texts) for texts in texts_by_cluster]
    try:
        vectorizer = CountVectorizer(stop_words="english")
        counts = vectorizer.fit_transform(documents).toarray().astype(float)
    except ValueError:  # no word left (empty texts, or stop words only)
        return [[] for _ in documents]
    words = vectorizer.get_feature_names_out()
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    idf = np.log(1 + counts.sum(axis=1).mean() / np.maximum(counts.sum(axis=0), 1))
    weights = tf * idf
    return [[words[i] for i in np.argsort(-row, kind="stable")[:top] if row[i] > 0] for row in weights]
