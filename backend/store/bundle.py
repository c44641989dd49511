"""A dataset as rows for the store's tables (`Bundle`), as loaders and imports hand it to the writer
(`writer.replace_dataset`), and the predictions it ships before ingest checks them (`Shipped`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Shipped:
    """Predictions that come with a dataset (a paper's model outputs) as the loader found them: ingest
    (`backend.imports.ingest.loaded`) checks them by the same path as a user's predictions, so a bad row
    stops the dataset naming its file and line, and adds them to the bundle's predictions."""

    run_id: str
    source: Any  # a file's path, or a DataFrame made from the loader's files
    name: str  # what an error calls it (the file, or the files)
    examples: Any  # DataFrame (example_id, split, input, hypothesis) of the examples it predicts
    options: dict  # fields of `backend.imports.predictions.Options`


@dataclass
class Bundle:
    """Rows for the store tables, as lists of dicts keyed by column name (a user dataset's examples may
    be a DataFrame: the writer types it column by column)."""

    dataset: dict[str, Any]
    examples: list[dict] | Any = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    passages: list[dict] = field(default_factory=list)
    qrels: list[dict] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    predictions: list[dict] = field(default_factory=list)
    ratings: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    shipped: list[Shipped] = field(default_factory=list)  # become `predictions` on ingest

    TABLES = ("examples", "pairs", "passages", "qrels", "runs", "predictions", "ratings")

    def counts(self) -> dict[str, int]:
        return {t: len(getattr(self, t)) for t in self.TABLES}
