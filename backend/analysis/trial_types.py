"""The analyses of a forced choice, self-paced reading or Maze study (issue 63, item 6), over the target answers of
the participants the declared exclusions keep (as every other study analysis):

- a forced choice: how often each condition was chosen out of the trials that offered it (Wilson 95% interval over
  trials, which treats a participant's trials as unrelated), and for a choice between two conditions the mixed
  logistic model (`metrics.choice_model`), which does not;
- reading and the Maze: the reading time of each region per condition (the Maze's up to its first wrong choice and
  only where chosen right), and the Maze's share of sentences completed without a wrong choice per condition.
"""

from __future__ import annotations

import json

import duckdb
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from backend.metrics import choice_model
from backend.store import studies as store_studies
from backend.studies import collection, exclusions
from backend.studies.design import Design, facet

SHARES = ["condition", "offered", "chosen", "share", "low", "high", "participants", "items"]
REGIONS = ["condition", "region", "n", "participants", "items", "mean_ms", "sd_ms", "median_ms"]
COMPLETED = ["condition", "sentences", "completed", "share", "low", "high", "participants"]
TITLES = {  # each archive file's table by what it is
    "choice_shares.csv": "choices per condition (Wilson 95% CI over trials)",
    "choice_model.csv": "mixed logistic model",
    "region_times.csv": "reading time per region and condition (ms)",
    "maze_completed.csv": "Maze sentences completed per condition (Wilson 95% CI)",
}


def kind_of(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """The study's trial type: rating | forced_choice | reading | maze."""
    return collection.design_of(collection.study(con, study_id)).trial.kind


def _kept_targets(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[Design, pd.DataFrame]:
    """The design and the target answers of the kept participants, with the item and condition of each and its
    detail read from JSON."""
    found = collection.design_of(collection.study(con, study_id))
    people, answers = collection.responses_of(con, study_id)
    kept = exclusions.kept(exclusions.apply(found, people, answers))
    examples = store_studies.example_rows(con, study_id).set_index("example_id")
    rows = answers[(answers["kind"] == "target") & answers["participant_id"].isin(kept)]
    return found, rows.assign(
        item=rows["trial"].map(facet(examples, found.item)),
        condition=rows["trial"].map(facet(examples, found.condition)),
        detail=[json.loads(d) if isinstance(d, str) else {} for d in rows["detail"]],
    )


def _wilson(hits: pd.Series, totals: pd.Series) -> tuple[pd.Series, pd.Series]:
    low, high = proportion_confint(hits.to_numpy(), totals.to_numpy(), alpha=0.05, method="wilson")
    return pd.Series(low, index=hits.index), pd.Series(high, index=hits.index)


def choice_shares(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per condition: trials that offered it, trials it was chosen in, the share with its Wilson 95% interval, and
    the participants and items it was offered to."""
    return _shares(_kept_targets(con, study_id)[1])


def choice_fit(con: duckdb.DuckDBPyConnection, study_id: str) -> choice_model.ChoiceFit | None:
    """The mixed logistic model of a choice between two conditions (the first offered against the second); None
    for a study of another type or one offering three or more (the engine has no multinomial mixed model)."""
    return _fit(*_kept_targets(con, study_id))


def region_times(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per condition and region (1 the first): answers, participants, items, and the mean, SD and median reading
    time in ms (the Maze: regions chosen right only)."""
    return _times(_kept_targets(con, study_id)[1])


def maze_completed(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per condition: Maze sentences, those completed without a wrong choice, the share (Wilson 95% interval over
    sentences) and the participants."""
    return _completed(_kept_targets(con, study_id)[1])


def _shares(rows: pd.DataFrame) -> pd.DataFrame:
    offered = [
        {"condition": c, "chosen": int(d["chosen"] == c), "participant": p, "item": i}
        for d, p, i in zip(rows["detail"], rows["participant_id"], rows["item"])
        for c in d.get("shown", [])
    ]
    frame = pd.DataFrame(offered, columns=["condition", "chosen", "participant", "item"])
    table = frame.groupby("condition").agg(
        offered=("chosen", "size"),
        chosen=("chosen", "sum"),
        participants=("participant", "nunique"),
        items=("item", "nunique"),
    )
    table["share"] = table["chosen"] / table["offered"]
    table["low"], table["high"] = _wilson(table["chosen"], table["offered"]) if len(table) else (None, None)
    return table.reset_index().reindex(columns=SHARES)


def _fit(found: Design, rows: pd.DataFrame) -> choice_model.ChoiceFit | None:
    if found.trial.kind != "forced_choice":
        return None
    offered = list(found.trial.options) or sorted({c for d in rows["detail"] for c in d.get("shown", [])})
    if len(offered) != 2:
        return None
    frame = pd.DataFrame(
        {
            "participant": rows["participant_id"].to_numpy(),
            "item": rows["item"].to_numpy(),
            "chose_first": [int(d["chosen"] == offered[0]) for d in rows["detail"]],
        }
    )
    return choice_model.fit(frame, offered[0], offered[1])


def _times(rows: pd.DataFrame) -> pd.DataFrame:
    timed = [
        {"condition": c, "region": r["region"], "rt_ms": r["rt_ms"], "participant": p, "item": i}
        for d, c, p, i in zip(rows["detail"], rows["condition"], rows["participant_id"], rows["item"])
        for r in d.get("regions", [])
        if r.get("correct", True)
    ]
    frame = pd.DataFrame(timed, columns=["condition", "region", "rt_ms", "participant", "item"])
    table = frame.groupby(["condition", "region"]).agg(
        n=("rt_ms", "size"),
        participants=("participant", "nunique"),
        items=("item", "nunique"),
        mean_ms=("rt_ms", "mean"),
        sd_ms=("rt_ms", "std"),
        median_ms=("rt_ms", "median"),
    )
    return table.reset_index().reindex(columns=REGIONS)


def _completed(rows: pd.DataFrame) -> pd.DataFrame:
    table = rows.groupby("condition").agg(
        sentences=("value", "size"), completed=("value", "sum"), participants=("participant_id", "nunique")
    )
    table["completed"] = table["completed"].astype(int)
    table["share"] = table["completed"] / table["sentences"]
    table["low"], table["high"] = _wilson(table["completed"], table["sentences"]) if len(table) else (None, None)
    return table.reset_index().reindex(columns=COMPLETED)


def tables(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, pd.DataFrame]:
    """The archive's files of the study's trial type (none for a rating study)."""
    kind = kind_of(con, study_id)
    if kind == "rating":
        return {}
    found, rows = _kept_targets(con, study_id)
    if kind == "forced_choice":
        fitted = _fit(found, rows)
        kept = {"choice_model.csv": fitted.table()} if fitted is not None and fitted.converged else {}
        return {"choice_shares.csv": _shares(rows)} | kept
    return {"region_times.csv": _times(rows)} | ({"maze_completed.csv": _completed(rows)} if kind == "maze" else {})


def methods(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """What methods.md says of the trials and the results of a forced choice, reading or Maze study ("" for a rating
    study), every number with what it counts."""
    found = collection.design_of(collection.study(con, study_id))
    kind = found.trial
    if kind.kind == "rating":
        return ""
    _, rows = _kept_targets(con, study_id)
    if kind.kind == "forced_choice":
        shares = _shares(rows)
        said = "; ".join(
            f"{r.condition} {r.chosen:,} of {r.offered:,} ({r.share:.3f} [{r.low:.3f}, {r.high:.3f}])"
            for r in shares.itertuples()
        )
        fitted = _fit(found, rows)
        model = (
            fitted.text()
            if fitted is not None
            else "With three or more sentences to choose from, no mixed logistic model is fitted (the analysis "
            "engine, mixedlm, has no multinomial mixed model)."
        )
        return (
            f"Each trial showed an item's members ({', '.join(kind.options) or 'every condition'}) as sentences to "
            "choose between, in an order drawn per trial from the participant's seed and recorded. "
            f"Times each condition was chosen out of the trials that offered it, after exclusions (Wilson 95% CI over "
            f"trials): {said or 'none (no answers analysed)'}. {model}"
        )
    split = "word by word" if kind.regions == "words" else f"in regions marked by '{kind.regions}'"
    times = _times(rows)
    median = times.groupby("condition")["median_ms"].median() if len(times) else pd.Series(dtype=float)
    medians = "; ".join(f"{c} {m:.0f} ms" for c, m in median.items()) or "none (no answers analysed)"
    if kind.kind == "reading":
        how = (
            f"Sentences were read {split} in a moving window (self-paced reading): each region shown as dashes until "
            "the participant pressed the space bar, the one before hidden again"
            + (f', followed by the comprehension question "{kind.question}"' if kind.question else "")
            + ". "
        )
    else:
        completed = _completed(rows)
        done = "; ".join(f"{r.condition} {r.completed:,} of {r.sentences:,}" for r in completed.itertuples())
        how = (
            f"Sentences were read {split} in the Maze task: each region beside a foil (the first beside "
            "'x-x-x'), the word's side drawn at random per region and recorded, chosen with e (left) or i (right); a "
            f"wrong choice ended the sentence. Sentences completed without a wrong choice, after exclusions: "
            f"{done or 'none'}. Only regions chosen right before any wrong choice are timed. "
        )
    return (
        how + "Reading times were measured in the participant's browser from the key press that showed a region "
        "(the Maze: from the pair's display or the choice before) to the one that left it, by the key events' own "
        f"timestamps. Median over regions of the per-region median reading time, per condition, "
        f"after exclusions: {medians} (region_times.csv has every region)."
    )
