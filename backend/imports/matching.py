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
import pyarrow as pa
import pyarrow.compute as pc

# non-ASCII characters folded onto ASCII ones (only strings that have non-ASCII characters are looked at)
FOLDS = [(r"[\x{2018}\x{2019}\x{201a}\x{201b}\x{00b4}]", "'"), (r"[\x{201c}\x{201d}\x{201e}\x{201f}\x{00ab}\x{00bb}]", '"'),
         (r"[\x{2013}\x{2014}\x{2212}]", "-"), (r"[\s\x{00a0}\x{2009}\x{202f}]+", " ")]


def normalise(texts: pd.Series) -> pd.Series:
    """Text as it is compared: NFC, lower-cased, curly quotes and backticks straight, dashes '-', white space
    (no-break spaces too) collapsed to one space and trimmed. Vectorised with Arrow (1M texts in about a second).

    >>> print(" | ".join(normalise(pd.Series([None, "  Don\u2019t   STOP\\n", "Cafe\u0301", "\u201cA\u201d\u00a0 b\u2014C `x`"]))))
     | don't stop | café | "a" b-c 'x'
    """
    values = pa.array(texts.astype(object).where(texts.notna(), ""), pa.string())
    values = pc.replace_substring(pc.utf8_lower(values), "`", "'")
    wide = pc.invert(pc.string_is_ascii(values))
    if pc.any(wide).as_py():
        folded = pc.utf8_normalize(values.filter(wide), "NFC")
        for pattern, replacement in FOLDS:
            folded = pc.replace_substring_regex(folded, pattern, replacement)
        merged = values.to_numpy(zero_copy_only=False).astype(object)
        merged[np.flatnonzero(wide.to_numpy(zero_copy_only=False))] = folded.to_numpy(zero_copy_only=False)
        values = pa.array(merged, pa.string())
    values = pc.utf8_trim_whitespace(pc.replace_substring_regex(values, r"\s+", " "))
    return pd.Series(values.to_numpy(zero_copy_only=False), index=texts.index, dtype=object)


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


def by_text(keys: pd.Series, examples: pd.DataFrame, example_keys: pd.Series, same_prediction) -> Matched:
    """`keys`: normalised text per file row; `example_keys`: per example (aligned with `examples`);
    `same_prediction()`: per file row, a value equal across rows that store the same prediction
    (computed only when some text is shared by several examples)."""
    index = pd.DataFrame({"key": example_keys.to_numpy(), "example_id": examples["example_id"].to_numpy()})
    per_key = index["key"].value_counts()
    n_examples = keys.map(per_key).fillna(0).astype(int)
    single = index[index["key"].map(per_key) == 1].set_index("key")["example_id"]
    example_id = keys.map(single).where(n_examples == 1).astype(object)
    reason = pd.Series("", index=keys.index, dtype=object)
    reason[n_examples == 0] = "no example with this text"
    repeated = n_examples > 1
    if repeated.any():  # rare: texts shared by several examples
        shared = _shared(keys[repeated], index[index["key"].isin(set(keys[repeated]))], same_prediction()[repeated])
        example_id[shared.index] = shared
        ambiguous = repeated & example_id.isna()
        reason[ambiguous] = ("ambiguous: the text is that of " + n_examples[ambiguous].astype(str) +
                             " examples and the file's rows for it differ or are not one per example")
    return Matched(example_id, reason)


def _shared(keys: pd.Series, index: pd.DataFrame, same: pd.Series) -> pd.Series:
    """For rows whose text k examples share: the k rows of a text take its k examples in order when there
    are exactly k of them and they store the same prediction; otherwise NaN (ambiguous)."""
    candidates = index.groupby("key")["example_id"].agg(list)
    rows = pd.DataFrame({"key": keys, "pred": same.fillna("").astype(str)})
    sizes = rows.groupby("key")["key"].transform("size")
    distinct = rows.groupby("key")["pred"].transform("nunique")
    fits = (sizes == keys.map(candidates).str.len()) & (distinct == 1)
    order = rows[fits].groupby("key").cumcount()
    out = pd.Series(np.nan, index=keys.index, dtype=object)
    out[fits] = [candidates[k][i] for k, i in zip(keys[fits], order)]
    return out
