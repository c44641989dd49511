"""Ingest: find each dataset, load it with its loader, and write it to the store atomically.

A dataset that cannot be found is skipped with one line saying how to add it; a malformed file
stops that dataset only, with an error naming file, line and field, and leaves the store as it was.
After each dataset loads, its trivial baseline runs are rewritten (`backend.datasets.baselines`); the
nearest-neighbour baseline needs the embedder and comes from `python -m backend baselines`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
from tqdm import tqdm

from backend.config import Settings, settings
from backend.datasets import DATASETS, LOADERS, baselines, spec
from backend.datasets.base import DataError, Source, describe_files
from backend.datasets.sources import DatasetSpec, download, resolve
from backend.imports.files import read
from backend.imports.predictions import Options, store_rows
from backend.store import backup
from backend.store.access import Opener, session
from backend.store.bundle import Bundle
from backend.store.writer import replace_dataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestResult:
    dataset: str
    status: str  # loaded | missing | failed
    message: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """What the command prints for it: status and message, then the counts and time."""
        counts = ", ".join(f"{v:,} {k}" for k, v in self.counts.items())
        return f"{self.dataset:8} {self.status:7} {self.message}" + (
            f"\n         {counts} in {self.seconds:.1f} s" if counts else ""
        )


def find(dataset: DatasetSpec, cli: dict[str, Path], cfg: Settings) -> tuple[Source | None, list[Path]]:
    """A local folder holding the dataset, else a verified download, else None."""
    source, looked = resolve(dataset, cli, cfg)
    return (source or download(dataset, cfg)), looked


def ingest(
    names: list[str] | None = None,
    cli: dict[str, Path] | None = None,
    store: Path | None = None,
    cfg: Settings | None = None,
    progress: bool = False,
) -> list[IngestResult]:
    """Ingest the named datasets (default: all) into the store; one result per dataset (with `progress`, a bar
    with the count and time left on stderr, and each dataset's result line as it is done)."""
    cfg, cli = cfg or settings(), cli or {}
    path = Path(store or cfg.store_path)
    if path.exists():
        with session(path) as con:
            backup.before(con, "re-ingest " + ", ".join(names or DATASETS))
    results = []
    with tqdm(names or list(DATASETS), desc="ingest", unit=" dataset", disable=not progress) as bar:
        for name in bar:
            bar.set_postfix_str(name)
            results.append(ingest_one(spec(name), cli, cfg, lambda: session(path, create=True)))
            if progress:
                bar.write(results[-1].line())
    return results


def ingest_one(dataset: DatasetSpec, cli: dict[str, Path], cfg: Settings, open_store: Opener) -> IngestResult:
    """Load one dataset's files (the store stays free meanwhile), then write it and its baselines in one session."""
    started = time.perf_counter()
    try:
        source, looked = find(dataset, cli, cfg)
        if source is None:
            places = ", ".join(str(p) for p in looked)
            return IngestResult(
                dataset.name, "missing", f"not found (looked in {places}); to add it, {dataset.how_to_add}"
            )
        sources = {dataset.name: source}
        for other in dataset.needs:
            found, _ = resolve(DATASETS[other], cli, cfg)
            if found is not None:
                sources[other] = found
        bundle = loaded(dataset.name, sources)
        files, digest = describe_files(source.path, [p for p in source.path.rglob("*") if p.is_file()])
        bundle.dataset.update(
            title=dataset.title,
            source=str(source.path),
            sha256=digest,
            files=files,
            license=dataset.license,
            citation=dataset.citation,
            description=dataset.description.as_dict() if dataset.description else None,
        )
    except (DataError, OSError) as exc:
        return IngestResult(dataset.name, "failed", f"{exc}; the store is unchanged for {dataset.name}")
    with open_store() as con:
        return _write(dataset, bundle, source, con, started)


def loaded(name: str, sources: dict[str, Source]) -> Bundle:
    """The dataset's bundle from its loader, with the predictions it ships checked and added as a user's
    would be (`Shipped`: a DataError names the file and line of the first bad row)."""
    bundle = LOADERS[name](sources)
    description = spec(name).description
    for shipped in bundle.shipped:
        table = read(shipped.source, name=shipped.name)
        for row in store_rows(table, shipped.examples, description, Options(**shipped.options), shipped.run_id):
            text = row.get("text")
            bundle.predictions.append({**row, "text": json.loads(text)} if isinstance(text, str) else row)
    return replace(bundle, shipped=[])


def _write(dataset: DatasetSpec, bundle, source: Source, con, started: float) -> IngestResult:
    try:
        replace_dataset(con, bundle)
    except duckdb.Error as exc:
        return IngestResult(dataset.name, "failed", f"{exc}; the store is unchanged for {dataset.name}")
    try:
        baselines.refresh(con, [dataset.name])  # keep the trivial baselines in step with the examples
    except (OSError, duckdb.Error) as exc:  # the examples are in; only the baselines are behind
        return IngestResult(
            dataset.name,
            "failed",
            f"loaded, but its trivial baselines could not be rewritten ({exc}); "
            "run `python -m backend baselines` to redo them",
        )
    counts = {k: v for k, v in bundle.counts().items() if v}
    notes = "".join(f"\n    note: {n}" for n in bundle.notes)
    return IngestResult(
        dataset.name, "loaded", f"from {source.path} ({source.how}){notes}", counts, time.perf_counter() - started
    )
