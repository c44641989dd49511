"""Public 3-way NLI training data from `shared/datasets/nli_train/`, as one pandas DataFrame.

Columns: `premise, hypothesis, label, source, split, license`; label is "E" / "N" / "C"; `source`
is the folder name; `split` the upstream split ("" where the source has none); `license` a short
string from the folder's SOURCE.md. The readers themselves live in `nli_sources` (one per folder).

    frame = load()                                  # DEFAULT sources
    train, heldout = heldout_split(frame, 0.05)     # premise-grouped, stratified by source

Several sources are non-commercial (CC BY-NC) or state no licence: a model trained on them is for
research use and must say so. NOPE (the evaluation set) is never read here.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pandas as pd

from backend.config import settings
from backend.datasets.base import DataError
from backend.training.nli_sources import LICENSES, READERS

log = logging.getLogger(__name__)

__all__ = [
    "READERS",
    "LICENSES",
    "SEVEN",
    "DEFAULT",
    "ALL",
    "COLUMNS",
    "default_root",
    "read_source",
    "load",
    "heldout_split",
]

COLUMNS = ["premise", "hypothesis", "label", "source", "split", "license"]
SEVEN = ["sick", "snli_esnli", "mnli_dev_matched", "taxinli", "anli_dev", "cad_snli", "imppres"]
"""The "first seven" sources (DOMAIN.md: a MiniLM cross-encoder trained on them reached ~0.77 held-out accuracy)."""
DEFAULT = SEVEN + ["lingnli"]
ALL = list(READERS)


def default_root() -> Path:
    """`settings().shared_datasets / "nli_train"` (PLAB_SHARED_DATASETS overrides the parent)."""
    return settings().shared_datasets / "nli_train"


def _check_names(names: list[str]) -> None:
    unknown = [name for name in names if name not in READERS]
    if unknown:
        raise ValueError(f"unknown NLI source(s) {unknown}; allowed: {', '.join(READERS)}")
    if not names:
        raise ValueError(f"no NLI sources requested; allowed: {', '.join(READERS)}")


def read_source(name: str, root: Path | None = None) -> pd.DataFrame:
    """One source's labelled pairs with all COLUMNS (no cross-source de-duplication)."""
    _check_names([name])
    folder = Path(root if root is not None else default_root()) / name
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: NLI source folder is missing")
    frame = READERS[name](folder)
    if frame.empty:
        raise DataError(folder, "no labelled pairs found")
    return frame.assign(source=name, license=LICENSES[name])[COLUMNS]


def load(root: Path | None = None, sources: list[str] | None = None) -> pd.DataFrame:
    """Concatenate the given sources (default DEFAULT, in that order); drop pairs with an empty
    premise or hypothesis, then exact duplicate (premise, hypothesis) pairs, keeping the first."""
    names = [sources] if isinstance(sources, str) else list(DEFAULT if sources is None else sources)
    _check_names(names)
    frame = pd.concat([read_source(name, root) for name in names], ignore_index=True)
    read = frame["source"].value_counts()
    frame = frame[(frame["premise"] != "") & (frame["hypothesis"] != "")]
    conflicts = frame.groupby(["premise", "hypothesis"], sort=False)["label"].nunique().gt(1).sum()
    if conflicts:
        log.info(
            "nli_train: %d duplicated pairs carry different labels; the first occurrence's label is kept", conflicts
        )
    frame = frame.drop_duplicates(["premise", "hypothesis"], keep="first").reset_index(drop=True)
    _log_counts(frame, names, read)
    return frame


def _log_counts(frame: pd.DataFrame, names: list[str], read: pd.Series) -> None:
    counts = frame.groupby(["source", "label"]).size()
    for name in names:
        kept = counts.get(name, pd.Series(dtype=int))
        log.info(
            "nli_train %s: %d pairs (E %d, N %d, C %d); %d dropped as empty or duplicate",
            name,
            kept.sum(),
            kept.get("E", 0),
            kept.get("N", 0),
            kept.get("C", 0),
            read.get(name, 0) - kept.sum(),
        )
    log.info("nli_train: %d pairs from %d source(s)", len(frame), len(names))


def _premise_key(premise: str, seed: int) -> str:
    """A stable key for a premise (BLAKE2b hex of seed + text): the order in which premises are held out."""
    return hashlib.blake2b(f"{seed}\0{premise}".encode(), digest_size=8).hexdigest()


def heldout_split(frame: pd.DataFrame, fraction: float = 0.05, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, heldout): deterministic, grouped by premise, stratified by source.

    Within each source, premises are taken in the order of their hash key until about `fraction` of
    that source's rows are held out; a premise held out for any source is held out everywhere, so no
    premise text lands on both sides. Both frames keep `frame`'s index."""
    if not 0 <= fraction < 1:
        raise ValueError(f"fraction must be in [0, 1), got {fraction}")
    sizes = frame.groupby(["source", "premise"], sort=False).size().rename("n").reset_index()
    keys = {p: _premise_key(p, seed) for p in sizes["premise"].unique()}
    sizes = sizes.assign(key=sizes["premise"].map(keys)).sort_values(["source", "key"], kind="stable")
    before = sizes.groupby("source")["n"].cumsum() - sizes["n"]
    target = fraction * sizes.groupby("source")["n"].transform("sum")
    held = frame["premise"].isin(set(sizes.loc[before < target, "premise"]))
    return frame[~held], frame[held]
