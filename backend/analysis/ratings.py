"""Ratings: researchers score stored model outputs (the Rate page, rating tasks, the commands), and how far their
scores agree.

A rating is one row of `ratings` (source 'user') keyed by (dataset_id, example_id, run_id, rater_id,
criterion): the run's dataset, the rated prediction's example, the rater, and one criterion of the
`criteria` table. Writing runs are scored on CREPE's four writing criteria (0-3; Yu et al. 2023,
"CREPE: Open-Domain Question Answering with False Presuppositions"), every other task on a binary
acceptability (0/1). `save` validates the whole form before it touches the store, then upserts
(or, for a criterion given as None, deletes) its rows in one transaction, so a rejected or failed
call leaves the store exactly as it was.

Agreement is computed with the libraries, not by hand:
- Krippendorff's alpha (`krippendorff.alpha`; Krippendorff 2011, "Computing Krippendorff's
  Alpha-Reliability"): ordinal metric for the 0-3 scales, nominal for the binary one, over the items
  that at least two raters scored; its 95% interval is a percentile bootstrap over those items
  (resampled with `bootstrap.weights`, seed 0, 1,000 resamples).
- Cohen's kappa (`sklearn.metrics.cohen_kappa_score`; Cohen 1960, quadratic weights after Cohen
  1968 "Weighted kappa" for the ordinal scales): the mean over rater pairs that share at least two
  items; pairs whose kappa is undefined (both raters gave one and the same score) are left out.
Both are NaN when undefined: no items, or no variation in the scores (alpha's expected disagreement
is then zero).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from numbers import Real

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import judging
from backend.metrics import agreement as agreement_metrics
from backend.metrics import bootstrap
from backend.metrics.rubrics import RUBRIC, criteria_for
from backend.models.output import readable
from backend.models.prompts import templates
from backend.store import judgements as store_judgements
from backend.store import rating_tasks as store_tasks
from backend.store import ratings as store_ratings
from backend.store import runs as store_runs
from backend.store.ids import MAX_RATER_ID, RATER_ID
from backend.store.writer import atomic

RATEABLE_TASKS = ("write", "qa", "detect", "nli")
MAX_NOTE = 2000


class RatingError(ValueError):
    """A rating the store does not accept; `field` names the input at fault (rater_id, a criterion, ...)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def criteria_of(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """What people rate the run on: its task's criteria, then every other criterion a judge of it scores (so the
    judge's scores can be set against people's), known from the judges' rubrics before any judge has run: those
    that score runs of its task, those of its judge runs (running ones too), and any criterion a judge scored."""
    _, task = _run(con, run_id)
    judged = [c for t in templates.for_task("judge") if t.strategy == "score" and task in t.judges for c in t.criteria]
    for rubric in store_judgements.of_run(con, run_id).query("kind == 'score' and run_id == @run_id")["rubric"]:
        judged += judging.criteria(rubric)
    judged += store_judgements.judged_criteria(con, run_id)  # a rubric since removed: what its judges scored
    usual = criteria_for(task)
    return usual + [c for c in dict.fromkeys(judged) if c not in usual and c in RUBRIC]


def rateable_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Complete or live model runs (no baselines, no imports) with error-free predictions: writing and
    QA runs first, then by run id; then every other run a rating task hands out (an imported or paper run), by
    run id. `n` predictions to rate (error-free), `parsed` of them answers in the expected format, and `rated`
    examples with user ratings."""
    frame = store_runs.listing(
        con,
        status=("complete", "live"),
        tasks=RATEABLE_TASKS,
        not_sources=("baseline", "import"),
        with_answers=True,
        order="outputs first",
    )
    tasked = [r for r in store_tasks.run_ids(con) if r not in set(frame["run_id"])]
    if tasked:
        every = store_runs.listing(con, status=None)
        frame = pd.concat([frame, every[every["run_id"].isin(tasked)]], ignore_index=True)
    rated = store_ratings.rated_examples(con)
    return frame[["run_id", "dataset_id", "task", "model_id", "parsed"]].assign(
        n=frame["ok"], rated=[rated.get(run_id, 0) for run_id in frame["run_id"]]
    )


def _run(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[str, str]:
    """(dataset_id, task) of the run, or RatingError(field='run_id') saying where runs are listed."""
    dataset_id, task = store_runs.field(con, run_id, "dataset_id"), store_runs.field(con, run_id, "task")
    if dataset_id is None:
        raise RatingError(
            "run_id",
            f"no run {run_id!r} in the store; expected a run id from rateable_runs() "
            "(the Rate page lists them; `python -m backend predict` makes new runs)",
        )
    return dataset_id, task


def targets(con: duckdb.DuckDBPyConnection, run_id: str, split: str | None = None) -> pd.DataFrame:
    """The run's error-free predictions to rate, by example id, with the example's gold data (a live
    run has no example rows: its input comes from the prediction's `text.input`)."""
    _, task = _run(con, run_id)
    frame = store_ratings.targets(con, run_id, split)
    frame["output_text"] = [
        readable(*row, task=task)
        for row in zip(
            frame.pop("presupposition"),
            frame.pop("correction"),
            frame["answer"],
            frame["label"],
            frame.pop("generation"),
        )
    ]
    return frame


def valid_rater(rater_id: str) -> str:
    """The rater id, stripped; RatingError(field='rater_id') saying what is allowed."""
    rater = rater_id.strip() if isinstance(rater_id, str) else ""
    if not rater:
        raise RatingError("rater_id", "empty; expected a name or e-mail identifying the rater")
    if len(rater) > MAX_RATER_ID:
        raise RatingError("rater_id", f"{len(rater)} characters; expected at most {MAX_RATER_ID}")
    if not RATER_ID.fullmatch(rater):
        raise RatingError("rater_id", f"{rater!r} has other characters; expected only letters, digits and . _ - + @")
    return rater


def rater_values(con: duckdb.DuckDBPyConnection, run_id: str, rater_id: str) -> dict[str, dict[str, float]]:
    """example_id → {criterion: value} of one rater's user ratings on the run (to pre-fill the form)."""
    rows = store_ratings.rater_rows(con, run_id, rater_id.strip())
    values: dict[str, dict[str, float]] = {}
    for example_id, criterion, value in rows:
        values.setdefault(example_id, {})[criterion] = value
    return values


def _score(criterion: str, value, low: float, high: float) -> float | None:
    """The value as a float if it is an integer score within [low, high]; None stays None (= clear)."""
    if value is None:
        return None
    expected = f"expected an integer from {low:g} to {high:g}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or not math.isfinite(value):
        raise RatingError(criterion, f"{value!r} is not a number; {expected}")
    if not float(value).is_integer():
        raise RatingError(criterion, f"{value!r} is not an integer; {expected}")
    if not low <= value <= high:
        raise RatingError(criterion, f"{value!r} is out of range; {expected}")
    return float(value)


class RatingConflict(RatingError):
    """Another session changed this rating after the form was loaded; nothing was saved. `stored` holds
    the ratings now in the store (criterion → value), for the form to show."""

    def __init__(self, field: str, message: str, stored: dict[str, float]):
        super().__init__(field, message)
        self.stored = stored


def save(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    example_id: str,
    rater_id: str,
    values: dict[str, float | int | None],
    note: str | None = None,
    loaded: dict[str, float] | None = None,
    task_id: str | None = None,
) -> int:
    """Store one rater's scores of one prediction: validate everything, then upsert each scored
    criterion (None deletes that criterion's rating) in one transaction. Returns the rows upserted.

    `loaded` is what the form showed when it was opened (criterion → value; absent = unrated). With
    it, only criteria the user changed are written, so a form left untouched never clears what
    another session saved meanwhile; and if another session changed a criterion this one changes
    too, nothing is saved and RatingConflict says what is stored now. Writes are serialised
    (`writer.atomic`), so concurrent saves from several tabs never fail on each other.

    `task_id`: the rating task the item is rated in (RatingError when it is not one of its items). As a person's
    act (who may rate as whom, in which task): `actions.ratings.save`."""
    rater = valid_rater(rater_id)
    if task_id is not None:
        _in_task(con, task_id, run_id, example_id)
    return _save(con, run_id, example_id, rater, values, note, loaded)


def _in_task(con: duckdb.DuckDBPyConnection, task_id: str, run_id: str, example_id: str) -> None:
    found = store_tasks.task(con, task_id)
    if found is None or found["run_id"] != run_id or not store_tasks.has_item(con, task_id, example_id):
        raise RatingError("example_id", f"{example_id!r} of run {run_id!r} is not an item of rating task {task_id!r}")


def _save(con, run_id: str, example_id: str, rater: str, values: dict, note, loaded) -> int:
    dataset_id, task = _run(con, run_id)
    if not store_ratings.predicted(con, run_id, example_id):
        raise RatingError(
            "example_id",
            f"run {run_id!r} has no prediction of {example_id!r}; expected an example id from targets(run_id)",
        )
    allowed = criteria_of(con, run_id)
    if not isinstance(values, dict) or not values:
        raise RatingError("values", f"no scores given; expected at least one of {', '.join(allowed)}")
    bounds = store_ratings.numeric_bounds(con)
    scores = {}
    for criterion, value in values.items():
        if criterion not in bounds or criterion not in allowed:
            reason = "unknown criterion" if criterion not in bounds else f"not rated on {task} runs"
            raise RatingError(str(criterion), f"{reason}; expected one of {', '.join(allowed)}")
        scores[criterion] = _score(criterion, value, *bounds[criterion])
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
        raise RatingError(
            "note",
            f"{len(note) if isinstance(note, str) else type(note).__name__}; "
            f"expected text of at most {MAX_NOTE} characters",
        )
    key = {"d": dataset_id, "e": example_id, "r": run_id, "u": rater}
    now = datetime.now(UTC).replace(tzinfo=None)
    written = 0
    with atomic(con, area="ratings"):  # read what is stored and write in one serialised transaction
        stored = store_ratings.stored(con, key)
        if loaded is not None:
            shown = {c: (None if v is None else float(v)) for c, v in loaded.items()}
            changed = {c: v for c, v in scores.items() if v != shown.get(c)}
            moved = [c for c in scores if stored.get(c) != shown.get(c)]  # by another session since the form opened
            clash = [c for c in moved if c in changed and stored.get(c) != changed[c]] or ([] if changed else moved)
            if clash:
                said = ", ".join(f"{c} {_shown(shown.get(c))} → {_shown(stored.get(c))}" for c in clash)
                raise RatingConflict(
                    clash[0],
                    f"another session changed {rater}'s rating of {example_id} after this "
                    f"form was opened ({said}); your choice was not saved. The form now "
                    "shows what is stored: choose again and save",
                    stored,
                )
            scores = changed or {
                c: v for c, v in scores.items() if v is not None
            }  # unchanged: saved again (a new note)
        if all(v is None for v in scores.values()) and not any(c in stored for c in scores):
            # nothing to clear either: saving would silently do nothing (and drop any note)
            raise RatingError("values", f"no score chosen; choose at least one of {', '.join(allowed)}")
        for criterion, value in scores.items():
            store_ratings.put(con, key, criterion, value, note, now)
            written += value is not None
    return written


def _shown(value: float | None) -> str:
    return "unrated" if value is None else f"{value:g}"


def ratings_frame(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pd.DataFrame:
    """User ratings of one run (all runs when None), in a stable order: what the page exports."""
    return store_ratings.user_ratings(con, run_id)


def _scored(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's user ratings with each criterion's scale, criteria in rubric order."""
    frame = store_ratings.scored(con, run_id)
    order = {c: i for i, c in enumerate(RUBRIC)}
    return frame.sort_values("criterion", key=lambda s: s.map(lambda c: order.get(c, len(order))), kind="stable")


def agreement(con: duckdb.DuckDBPyConnection, run_id: str, examples: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per rated criterion: raters, items scored by ≥ 2 raters, rating rows, Krippendorff's alpha with
    a 95% bootstrap interval over items, and the mean pairwise Cohen's kappa with its pair count."""
    columns = ["criterion", "raters", "items", "ratings", "alpha", "alpha_low", "alpha_high", "kappa", "rater_pairs"]
    rows = []
    scored = _scored(con, run_id)
    if examples is not None:  # a rating task's items only
        scored = scored[scored["example_id"].isin(examples)]
    for criterion, group in scored.groupby("criterion", sort=False):
        low, high = int(group["min_value"].iloc[0]), int(group["max_value"].iloc[0])
        domain = np.arange(low, high + 1)
        level = agreement_metrics.level(domain)
        table = group.pivot(index="rater_id", columns="example_id", values="value")
        matrix = table.loc[:, table.notna().sum() >= 2].to_numpy(dtype=float)
        items = matrix.shape[1]
        interval = (float("nan"), float("nan"))
        if items >= 2:
            resampled = [
                agreement_metrics.alpha(matrix[:, np.repeat(np.arange(items), counts.astype(int))], domain, level)
                for counts in bootstrap.weights(items)
            ]
            interval = bootstrap.interval(np.array(resampled))
        kappas = agreement_metrics.pairwise_kappas(table.to_numpy(dtype=float), domain, level == "ordinal")
        rows.append(
            [
                criterion,
                table.shape[0],
                items,
                len(group),
                agreement_metrics.alpha(matrix, domain, level),
                *interval,
                float(np.mean(kappas)) if kappas else float("nan"),
                len(kappas),
            ]
        )
    return pd.DataFrame(rows, columns=columns)


def summary(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per rated criterion: the mean score with a 95% bootstrap interval, over items (each item's
    scores averaged across its raters, so the resampling unit is the item), rating rows and raters."""
    rows = []
    for criterion, group in _scored(con, run_id).groupby("criterion", sort=False):
        estimate = bootstrap.mean(group.groupby("example_id")["value"].mean().to_numpy())
        rows.append(
            [
                criterion,
                estimate.value,
                estimate.low,
                estimate.high,
                estimate.n,
                len(group),
                group["rater_id"].nunique(),
            ]
        )
    return pd.DataFrame(rows, columns=["criterion", "mean", "low", "high", "items", "ratings", "raters"])
