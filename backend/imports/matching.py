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
FOLDS = [
    (r"[\x{2018}\x{2019}\x{201a}\x{201b}\x{00b4}]", "'"),
    (r"[\x{201c}\x{201d}\x{201e}\x{201f}\x{00ab}\x{00bb}]", '"'),
    (r"[\x{2013}\x{2014}\x{2212}]", "-"),
    (r"[\s\x{00a0}\x{2009}\x{202f}]+", " "),
]


def normalise(texts: pd.Series) -> pd.Series:
    """Text as it is compared: NFC, lower-cased, curly quotes and backticks straight, dashes '-', white space
    (no-break spaces too) collapsed to one space and trimmed. Vectorised with Arrow (1M texts in about a second).

    >>> texts = [None, "  Don\u2019t   STOP\\n", "Cafe\u0301", "\u201cA\u201d\u00a0 b\u2014C `x`"]
    >>> print(" | ".join(normalise(pd.Series(texts))))
     | don't stop | café | "a" b-c 'x'
    """
    return pd.Series(normalised(texts).to_numpy(zero_copy_only=False), index=texts.index, dtype=object)


def key(frame: pd.DataFrame, columns: list[str], split: str | None = None) -> pa.Array:
    """Per row, the key text matching compares: the normalised text of `columns` joined by U+001F,
    after the row's split (trimmed) and U+001E when a `split` column is given."""
    parts = [normalised(frame[c]) for c in columns]
    if split:
        parts.insert(
            0,
            pc.utf8_trim_whitespace(pa.array(frame[split].fillna("").astype(str).to_numpy(dtype=object), pa.string())),
        )
    joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")
    joined = pc.replace_substring(joined, "\x1f", "\x1e", max_replacements=1) if split else joined
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def normalised(texts: pd.Series) -> pa.Array:
    """`normalise` as an Arrow array (what `key` joins without a round trip through Python strings)."""
    try:
        values = pa.array(texts, from_pandas=True)  # no copy for pandas' Arrow-backed strings
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types (numbers and text) in one column
        values = None
    if values is None or not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = pa.array([None if v is None or v != v else str(v) for v in texts.astype(object)], pa.string())
    values = pc.replace_substring(pc.utf8_lower(values.cast(pa.string()).fill_null("")), "`", "'")
    values = _where(values, pc.invert(pc.string_is_ascii(values)), _fold)
    runs = pc.match_substring(values, "  ")  # regex only where white space needs collapsing: it is the slow step
    for other in ("\t", "\n", "\r", "\f", "\v"):
        runs = pc.or_(runs, pc.match_substring(values, other))
    return pc.utf8_trim_whitespace(_where(values, runs, lambda v: pc.replace_substring_regex(v, r"\s+", " ")))


def _fold(values: pa.Array) -> pa.Array:
    values = pc.utf8_normalize(values, "NFC")
    for pattern, replacement in FOLDS:
        values = pc.replace_substring_regex(values, pattern, replacement)
    return values


def _where(values: pa.Array, mask: pa.Array, fn) -> pa.Array:
    """`fn` applied to the values where `mask` holds, the others unchanged."""
    if not pc.any(mask).as_py():
        return values
    merged = values.to_numpy(zero_copy_only=False).astype(object)
    merged[np.flatnonzero(mask.to_numpy(zero_copy_only=False))] = fn(values.filter(mask)).to_numpy(zero_copy_only=False)
    return pa.array(merged, pa.string())


@dataclass(frozen=True)
class Matched:
    example_id: pd.Series  # per file row: the matched example id, or NaN
    reason: pd.Series  # per file row: '' when matched, else why not (unknown id, no such text, ambiguous)


def by_id(ids: pd.Series, examples: pd.DataFrame) -> Matched:
    """`examples` has an `example_id` column; ids are compared as trimmed strings."""
    if pd.api.types.is_float_dtype(ids) and np.all(np.mod(ids.dropna(), 1) == 0):
        ids = ids.astype("Int64")  # whole numbers read as floats (a JSON column with a missing value): 7, not 7.0
    wanted = ids.fillna("").astype(str).str.strip()
    known = pa.array(examples["example_id"].to_numpy(dtype=object), pa.string())
    found = pd.Series(
        pc.is_in(pa.array(wanted.to_numpy(dtype=object), pa.string()), value_set=known).to_numpy(zero_copy_only=False),
        index=ids.index,
    )  # Arrow's hash set: pandas' isin on Arrow strings loops in Python
    reason = pd.Series(np.where(found, "", "no example with id " + wanted), index=ids.index)
    return Matched(wanted.where(found), reason)


def by_text(wanted: pa.Array, rows: pd.Index, examples: pd.DataFrame, known: pa.Array, same_prediction) -> Matched:
    """`wanted`: the key of each file row (`rows` is the file's index); `known`: the key of each example
    (aligned with `examples`); `same_prediction()`: per file row, a value equal across rows that store the
    same prediction (computed only when some text is shared by several examples)."""
    tally = pc.value_counts(known)  # Arrow hash tables throughout: a million keys in well under a second
    found = pc.index_in(wanted, value_set=tally.field("values")).to_numpy(zero_copy_only=False)
    per_key = tally.field("counts").to_numpy()
    n_examples = pd.Series(np.where(np.isnan(found), 0, per_key[np.nan_to_num(found).astype(int)]), index=rows)
    first = pc.index_in(wanted, value_set=known).to_numpy(zero_copy_only=False)  # the first example with the key
    ids = examples["example_id"].to_numpy(dtype=object)
    example_id = pd.Series(
        np.where(n_examples == 1, ids[np.nan_to_num(first).astype(int)], None), index=rows, dtype=object
    )
    reason = pd.Series("", index=rows, dtype=object)
    reason[n_examples == 0] = "no example with this text"
    repeated = n_examples > 1
    if repeated.any():  # rare: texts shared by several examples
        keys = pd.Series(wanted.to_numpy(zero_copy_only=False), index=rows, dtype=object)[repeated]
        index = pd.DataFrame({"key": known.to_numpy(zero_copy_only=False), "example_id": ids})
        shared = _shared(keys, index[index["key"].isin(set(keys))], same_prediction()[repeated])
        example_id[shared.index] = shared
        ambiguous = repeated & example_id.isna()
        reason[ambiguous] = (
            "ambiguous: the text is that of "
            + n_examples[ambiguous].astype(str)
            + " examples and the file's rows for it differ or are not one per example"
        )
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
