"""The validation report of an import: what was read, matched, skipped and wrong, before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

SHOWN = 20  # problems listed per kind in a report


@dataclass(frozen=True)
class Problem:
    kind: str  # unmatched | ambiguous | duplicate | unknown label | bad probabilities | empty | column
    where: str  # 'line 12' / 'record 11' / 'options' / 'file'
    message: str
    line: int | None = None  # the file line, where the format has lines


@dataclass
class Report:
    file: str
    sha256: str
    format: str
    dataset: str
    task: str = ""
    rows: int = 0
    matched: int = 0
    examples: int = 0  # examples the run could cover (the dataset, or the chosen split)
    match_by: str = ""
    columns: dict = field(default_factory=dict)
    probabilities: str = "none"  # none | given | softmax of logits | argmax
    problems: list[Problem] = field(default_factory=list)  # any of these rejects the import
    skipped: list[Problem] = field(default_factory=list)  # rows left out (unmatched, ambiguous)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def coverage(self) -> float:
        return self.matched / self.examples if self.examples else 0.0

    def counts(self) -> dict[str, int]:
        """Rows per kind of problem (a problem of the whole file or of the options is not a row)."""
        rows = [p.kind for p in self.problems + self.skipped if p.where not in ("file", "options")]
        return pd.Series(rows, dtype=object).value_counts().to_dict()

    def table(self) -> pd.DataFrame:
        """The listed problems and skipped rows (at most SHOWN per kind), for a page or a terminal."""
        rows = [
            {"status": "rejects the import", "kind": p.kind, "where": p.where, "message": p.message}
            for p in self.problems
        ] + [{"status": "skipped", "kind": p.kind, "where": p.where, "message": p.message} for p in self.skipped]
        frame = pd.DataFrame(rows, columns=["status", "kind", "where", "message"])
        return frame.groupby(["status", "kind"], sort=False).head(SHOWN).reset_index(drop=True)

    def summary(self) -> str:
        lines = [
            f"{self.file} ({self.format}, SHA-256 {self.sha256[:12]}…) → dataset {self.dataset}, task {self.task}",
            f"rows read {self.rows:,}; matched by {self.match_by} {self.matched:,}; "
            f"coverage {self.coverage:.1%} of {self.examples:,} examples; probabilities: {self.probabilities}",
            "columns: " + ", ".join(f"{role} ← {col}" for role, col in self.columns.items()),
        ]
        lines += [f"{kind}: {n:,} rows" for kind, n in self.counts().items()]
        lines += [f"note: {n}" for n in self.notes]
        lines.append(
            "OK: nothing rejected" if self.ok else f"REJECTED: {len(self.problems):,} problems; nothing was written"
        )
        return "\n".join(lines)


class ImportRejected(ValueError):
    """The report has problems: nothing was written."""

    def __init__(self, report: Report):
        self.report = report
        first = report.problems[0]
        super().__init__(
            f"{report.file}: {len(report.problems):,} problems, e.g. {first.where}: {first.message}; nothing was "
            f"written"
        )
