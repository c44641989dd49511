"""What the widgets every page shares read (ui/widgets.py, ui/text.py, ui/urls.py, ui/charts, ui/resources): the
datasets in the store, a dataset's origin, the verdicts behind the \"below baseline\" badge, the one rendering
rule for outside text, and the retrieval indexes."""

from __future__ import annotations

import duckdb
import pandas as pd

from backend.analysis import markdown
from backend.analysis import verdicts as analysis_verdicts
from backend.analysis.projection import BY_CONSTRUCTION  # noqa: F401 — the charts' names
from backend.analysis.verdicts import ABOVE, BELOW, NO_BASELINE, NOT_DIFFERENT, RULE  # noqa: F401 — the widgets' names
from backend.datasets.description import OPERATORS  # noqa: F401 — the widgets' names
from backend.store import queries
from backend.store.ids import JOINER  # noqa: F401 — the widgets' names
from backend.store.sessions import DATA, reads


@reads(DATA)
def verdicts(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """Every run that is not a baseline, per headline split: dataset, run, model, kind, split, metric, value, low,
    high, n, unparsed, contaminated, baseline (its run id, '' without one), baseline_value, baseline_low,
    baseline_high, baseline_n (the items both were scored on), verdict (one of BELOW, NOT_DIFFERENT, ABOVE,
    NO_BASELINE), the paired test behind it (difference, difference_low, difference_high, p_value, test,
    test_counts) and figures (the numbers behind it, in words): `analysis.verdicts`."""
    return analysis_verdicts.verdicts(con, dataset)


def of(
    table: pd.DataFrame,
    dataset: str | None,
    runs: tuple[str, ...] = (),
    model: str | None = None,
    splits: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """The rows of `verdicts` flagged (BELOW, NOT_DIFFERENT) for some runs (or every run of a model), on one dataset or
    (None) on any, on some splits (None: every headline split)."""
    return analysis_verdicts.of(table, dataset, runs, model, splits)


@reads(DATA)
def loaded_datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded dataset: title, source folder, when, licence, notes (a list), whether a user's, example
    count."""
    return queries.loaded_datasets(con)


@reads(DATA)
def origin(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict:
    """Where a dataset came from: its source, the SHA-256 of what was read, and for a generated set the line saying
    what it was generated from (the template or facts; its first note)."""
    return queries.origin(con, dataset_id)


def message(text) -> str:
    """An error message (which may quote a URL's or a file's value) shown as text, with its `code` spans kept: nothing
    inside a code span is rendered as a link or an image."""
    return markdown.message(text)


def option(value) -> str:
    """A widget option that Streamlit shows as Markdown and also writes into the URL as shown (pills, segmented
    controls, radios bound to the URL): unchanged when it cannot be read as markup (letters, digits, spaces and _ -
    / . + = → ', no "www."), so ids and labels keep their URL values; else `plain`."""
    return markdown.option(value)


def plain(text) -> str:
    """Text shown as it is in Markdown: no link, image, emphasis, HTML or Streamlit directive can be planted through
    it, and no bare URL or address becomes a link."""
    return markdown.plain(text)


def indexes(con: duckdb.DuckDBPyConnection, corpus_id: str = "wiki") -> dict:
    """The retrievers {"bm25", "dense", "hybrid"} over the corpus, from saved indexes only (never a 5-minute build);
    FileNotFoundError saying what to run when one is missing."""
    from backend.retrieval.index import load_all  # lazy: start-up time (torch, faiss)

    try:
        return load_all(con, corpus_id)
    except LookupError as exc:  # no corpus in the store: the same "not here yet" as a missing index
        raise FileNotFoundError(str(exc)) from None
