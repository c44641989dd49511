"""Matching a user's rows to a dataset's examples: by example id, or by text.

Text is compared after `normalise`: Unicode NFC, case folded, curly quotes and backticks made
straight, dashes unified, whitespace runs collapsed to one space and trimmed. NLI rows match on
premise + hypothesis, other rows on the question (the example's input).

A text shared by k examples (NOPE has a few repeated items) is matched only when the file has
exactly k rows with that text and they all carry the same prediction: then any assignment stores
the same thing. Otherwise those rows are reported as ambiguous, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "`": "'", "\u00b4": "'",
                        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
                        "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " "})


def normalise(texts: pd.Series) -> pd.Series:
    """Text as it is compared: NFC, case folded, quotes straight, dashes '-', spaces collapsed.

    >>> normalise(pd.Series(["  Don\u2019t   STOP\\n", "Cafe\u0301"])).tolist() == ["don't stop", "caf\u00e9"]
    True
    """
    out = texts.fillna("").astype(str).str.normalize("NFC").str.casefold().str.translate(QUOTES)
    return out.str.replace(r"\s+", " ", regex=True).str.strip()


@dataclass(frozen=True)
class Matched:
    example_id: pd.Series    # per file row: the matched example id, or NaN
    reason: pd.Series        # per file row: '' when matched, else why not (unknown id, no such text, ambiguous)


def by_id(ids: pd.Series, examples: pd.DataFrame) -> Matched:
    """`examples` has an `example_id` column; ids are compared as trimmed strings."""
    wanted = ids.fillna("").astype(str).str.strip()
    found = wanted.isin(set(examples["example_id"]))
    reason = pd.Series(np.where(found, "", "no example with id " + wanted), index=ids.index)
    return Matched(wanted.where(found), reason)


def by_text(keys: pd.Series, examples: pd.DataFrame, example_keys: pd.Series, same_prediction: pd.Series) -> Matched:
    """`keys`: normalised text per file row; `example_keys`: per example (aligned with `examples`);
    `same_prediction`: per file row, a value equal across rows that store the same prediction."""
    index = pd.DataFrame({"key": example_keys.to_numpy(), "example_id": examples["example_id"].to_numpy()})
    per_key = index.groupby("key")["example_id"].agg(list)
    candidates = keys.map(per_key)
    n_examples = candidates.map(lambda c: len(c) if isinstance(c, list) else 0)
    rows = pd.DataFrame({"key": keys, "pred": same_prediction.fillna("").astype(str), "n": n_examples})
    rows_per_key = rows.groupby("key")["key"].transform("size")
    preds_per_key = rows.groupby("key")["pred"].transform("nunique")
    unique = n_examples == 1
    shared = (n_examples > 1) & (rows_per_key == n_examples) & (preds_per_key == 1)
    example_id = pd.Series(np.nan, index=keys.index, dtype=object)
    example_id[unique] = candidates[unique].str[0]
    if shared.any():  # the k rows of a repeated text take its k examples in order
        order = rows[shared].groupby("key").cumcount()
        example_id[shared] = [c[i] for c, i in zip(candidates[shared], order)]
    reason = pd.Series("", index=keys.index, dtype=object)
    reason[n_examples == 0] = "no example with this text"
    ambiguous = (n_examples > 1) & ~shared
    reason[ambiguous] = ("ambiguous: the text is that of " + n_examples[ambiguous].astype(str) +
                         " examples and the file's rows for it differ or are not one per example")
    return Matched(example_id, reason)
