"""A judgement study's analysis, beside the models (issue 47): progress per list, the declared exclusions applied
rule by rule, people's mean answer per condition with a 95% CI (participants and items resampled together,
`metrics.gradient`) before and after the exclusions, per-item means, the runs of the study's source dataset on the
same items, and what a paper's methods section and its data archive need (`archive`: with the kept mixed-model fit
and the latest power run, `analyses`).
"""

from __future__ import annotations

import io
import json
import zipfile

import duckdb
import pandas as pd

from backend.analysis import gradient, mixed_model, power_analysis, trial_types
from backend.metrics import gradient as gradient_metrics
from backend.metrics import mixed_models
from backend.store import studies as store_studies
from backend.studies import collection, exclusions
from backend.studies.collection import general_url  # noqa: F401 — a general link's URL, for the API and views
from backend.studies.design import Design, facet, items

MEANS = ["stage", "condition", "n", "participants", "items", "mean", "low", "high"]
BEFORE, AFTER = "all who finished", "after exclusions"


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return store_studies.listing(con)


def pilots(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, int]:
    """The study's pilot participants and answers ({"participants", "answers"}; none for a study that does not
    exist): shown beside the study, never analysed."""
    return store_studies.pilots(con, study_id)


def deletions(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Whose data were deleted: participant_id, deleted_at, deleted_by, reason (never an answer)."""
    return store_studies.deletions(con, study_id)


def design(con: duckdb.DuckDBPyConnection, study_id: str) -> Design:
    return collection.design_of(collection.study(con, study_id))


def progress(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per list: participants who started, who finished, who timed out, whose submission was returned or who were
    screened out (holding no place), and answers given."""
    people = store_studies.participants(con, study_id)
    table = people.groupby("list_no").agg(
        started=("participant_id", "size"),
        finished=("finished_at", lambda s: int(s.notna().sum())),
        timed_out=("ended", lambda s: int((s == "timed out").sum())),
        returned=("ended", lambda s: int((s == "returned").sum())),
        screened_out=("ended", lambda s: int((s == "screened out").sum())),
        answers=("answered", "sum"),
    )
    return table.reset_index().rename(columns={"list_no": "list"})


def participants(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per participant: list, seed, started, finished, seconds, controls' mean, attention failures, excluded_by."""
    return exclusions.apply(design(con, study_id), *collection.responses_of(con, study_id))


def analysed(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """'36 participants analysed (the study is closed); left out: 4 by controls_sd': the participants every page,
    export and command reads (`collection.analysed`)."""
    collection.study(con, study_id)
    return collection.analysed(con, study_id).describe()


def exclusion_log(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return exclusions.log(design(con, study_id), *collection.responses_of(con, study_id))


def _rated(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[Design, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The design, the target answers of participants who finished (rater, item, value, condition, item facet),
    those of the participants the exclusions keep, and the participants with their `excluded_by`."""
    found = design(con, study_id)
    people, answers = collection.responses_of(con, study_id)
    applied = exclusions.apply(found, people, answers)
    examples = store_studies.example_rows(con, study_id).set_index("example_id")
    targets = answers[answers["kind"] == "target"]
    frame = pd.DataFrame(
        {
            "rater": targets["participant_id"].to_numpy(),
            "item": targets["trial"].to_numpy(),
            "value": targets["value"].to_numpy(dtype=float),
        }
    )
    for key, name in (("condition", found.condition), ("family", found.item)):
        frame[key] = frame["item"].map(facet(examples, name))
    finished = frame[
        frame["rater"].isin(applied.loc[applied["excluded_by"] != exclusions.NOT_FINISHED, "participant_id"])
    ]
    return found, finished, finished[finished["rater"].isin(exclusions.kept(applied))], applied


def condition_means(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """stage (all who finished | after exclusions), condition, n (answers), participants, items, mean, low, high:
    people's mean answer per condition with a 95% CI from the crossed bootstrap, in the design's condition order."""
    _, frame, kept, _ = _rated(con, study_id)
    return _means(frame, kept)


def _means(frame: pd.DataFrame, kept: pd.DataFrame) -> pd.DataFrame:
    tables = []
    for stage, rows in ((BEFORE, frame), (AFTER, kept)):
        table = gradient_metrics.per_predicate(rows.rename(columns={"condition": "predicate"}))
        tables.append(table.rename(columns={"predicate": "condition"}).assign(stage=stage))
    order = sorted(frame["condition"].unique())
    table = _numeric(pd.concat(tables, ignore_index=True)[MEANS])
    return table.sort_values(["stage", "condition"], key=lambda c: c.map(_rank(c, order)), ignore_index=True)


def _numeric(table: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers and means as floats, also when a stage has no answers (an empty part is untyped)."""
    counts, means = ["n", "participants", "items"], ["mean", "low", "high"]
    return table.astype(dict.fromkeys(counts, "int64") | dict.fromkeys(means, "float64"))


def _rank(column: pd.Series, order: list[str]):
    return {"stage": {BEFORE: 0, AFTER: 1}, "condition": {c: i for i, c in enumerate(order)}}[column.name]


def results(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, pd.DataFrame]:
    """The study's results by what they are: a rating study's condition means before and after the exclusions; a
    forced choice, reading or Maze study's own tables (analysis.trial_types), after the exclusions."""
    typed = trial_types.tables(con, study_id)
    if not typed:
        return {"condition means": condition_means(con, study_id)}
    return {trial_types.TITLES[name]: table for name, table in typed.items()}


def item_means(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Per item and condition, after exclusions: example_id, the item, the condition, answers, mean, sd."""
    _, _, kept, _ = _rated(con, study_id)
    table = kept.groupby(["item", "family", "condition"]).agg(
        answers=("value", "size"), mean=("value", "mean"), sd=("value", "std")
    )
    return table.reset_index().rename(columns={"item": "example_id", "family": "item"})


def runs(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """The complete NLI runs on the study's source dataset (they answer the same items)."""
    return gradient.runs(con, study_id)


def beside_models(con: duckdb.DuckDBPyConnection, study_id: str, run_ids: tuple[str, ...] = ()) -> pd.DataFrame:
    """who (people after exclusions, or a run), condition, n, participants, items, mean, low, high: each run's
    expected answer on the study's scale (the gradient spec's formula) on the items people answered."""
    _, _, kept, _ = _rated(con, study_id)
    tables = [_per_condition(kept).assign(who=gradient.PEOPLE)]
    for run_id in run_ids:
        values = gradient.run_values(con, study_id, run_id)
        items = kept.drop_duplicates("item")
        said = items.assign(value=items["item"].map(values), rater="model").dropna(subset=["value"])
        tables.append(_per_condition(said).assign(who=run_id))
    table = _numeric(pd.concat(tables, ignore_index=True))
    return table[["who", "condition", "n", "participants", "items", "mean", "low", "high"]]


def _per_condition(frame: pd.DataFrame) -> pd.DataFrame:
    table = gradient_metrics.per_predicate(frame.rename(columns={"condition": "predicate"}))
    return table.rename(columns={"predicate": "condition"}).sort_values("condition", ignore_index=True)


def long_responses(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Every response, one row each: participant, list, position, kind, trial, the item and condition, value,
    label, when, what the participant's browser measured (moved: whether the control was touched; rt_ms: from the
    item's display to the answer; left_count, left_ms: times and total time away from the tab; empty where nothing
    was measured; detail: a forced choice's order shown, a reading or Maze trial's regions with their times, as JSON)
    and whom the exclusions leave out (excluded_by; '' when kept)."""
    found = design(con, study_id)
    people, answers = collection.responses_of(con, study_id)
    applied = exclusions.apply(found, people, answers).set_index("participant_id")
    examples = store_studies.example_rows(con, study_id).set_index("example_id")
    frame = answers.assign(
        list=answers["participant_id"].map(applied["list_no"]),
        item=answers["trial"].map(facet(examples, found.item)),
        condition=answers["trial"].map(facet(examples, found.condition)),
        excluded_by=answers["participant_id"].map(applied["excluded_by"]),
    )
    columns = ["participant_id", "list", "position", "kind", "trial", "item", "condition", "value", "label"]
    return frame[[*columns, "answered_at", "moved", "rt_ms", "left_count", "left_ms", "detail", "excluded_by"]]


def methods(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """A methods paragraph with the study's numbers filled in, each labelled with what it counts: design, lists, order,
    scale; who started, withdrew, was deleted on request, did not finish, was excluded by each declared rule and was
    analysed (pilots never counted); the means after exclusions (the mean alone, saying why, where no interval can be
    estimated); and the analysed participants' response times."""
    row = collection.study(con, study_id)
    found, rated, kept_rows, applied = _rated(con, study_id)
    people, answers = collection.responses_of(con, study_id)
    log = exclusions.log(found, people, answers)
    kept = exclusions.kept(applied)
    grid = items(found, store_studies.example_rows(con, study_id))
    conditions, item_count = len(grid.grid.columns), len(grid.grid)
    assignment = {
        "latin": _latin(conditions, item_count),
        "crossed": f"every item in every condition ({_count(item_count * conditions, 'trial')})",
        "random": f"{_count(found.k or 0, 'item')} drawn at random, conditions rotated from a random start",
    }[found.assignment]
    if found.trial.kind == "forced_choice":  # one trial per item, its members shown together
        items_seen = item_count if found.assignment == "crossed" else found.k or 0
        drawn = "" if found.assignment == "crossed" else " drawn at random"
        assignment = f"{_count(items_seen, 'item')}{drawn}, one trial each"
    scale = found.scale
    if scale.kind == "choice":
        answered = "choosing one of " + ", ".join(f"'{label}' ({value:g})" for label, value in scale.options)
    else:
        ends = f" ('{scale.left}' to '{scale.right}')" if scale.left or scale.right else ""
        kind = "a slider" if scale.kind == "slider" else f"a {len(scale.points)}-point scale"
        answered = f"on {kind} from {scale.min:g} to {scale.max:g}{ends}"
    extras = []
    if grid.controls:
        extras.append(f"{_count(len(grid.controls), 'control item')} (expected answer {found.controls['expected']})")
    if found.attention:
        extras.append(_count(len(found.attention), "attention check"))
    if found.practice:
        extras.append(f"after {_count(len(found.practice), 'practice item')}")
    typed = trial_types.methods(con, study_id)  # a forced choice, reading or Maze study: its own trials and results
    asked = f'They answered the question "{found.question}" (filled in from each item) {answered}. '
    return (
        f"Study {study_id} (design version {row['version']}, frozen at its first response"
        f"{' on ' + format(row['frozen_at'], '%Y-%m-%d') if row['frozen_at'] is not None else ''}) showed items of "
        f"the dataset {found.dataset}"
        f"{' (split ' + found.split + ')' if found.split else ''}. Each participant saw {assignment}"
        f"{', plus ' + ', '.join(extras) if extras else ''}, in an order randomised per participant "
        f"(seed recorded{', no two trials of one ' + found.separate + ' in a row' if found.separate else ''}). "
        + ("" if typed else asked)
        + _flow(applied, deletions(con, study_id), row["status"] == "closed")
        + _excluded(found, log, len(kept), len(kept_rows))
        + (typed + " " if typed else _means_text(rated, kept_rows))
        + _demographics(found)
        + _timing(found, answers, kept)
    )


def _means_text(rated: pd.DataFrame, kept_rows: pd.DataFrame) -> str:
    """What methods.md says of a rating study's means after exclusions (the mean alone, saying why, where no
    interval can be estimated)."""
    means = _means(rated, kept_rows)
    after = means[means["stage"] == AFTER]
    missing = after["low"].isna() | after["high"].isna()
    results = "; ".join(_estimate(r) for r in after.itertuples())
    least = gradient_metrics.MIN_EACH
    interval = f"; an interval needs at least {_people(least)} and {_count(least, 'item')}"
    return (
        "Mean answer per condition after exclusions (95% CI, bootstrap over participants and items together"
        f"{interval if missing.any() else ''}): {results or 'none (no answers analysed)'}. "
    )


def _latin(conditions: int, item_count: int) -> str:
    """What a Latin square's participant saw: 'one of 4 lists of a Latin square: every item once, in one of its 4
    conditions, each condition on 3 items'."""
    if conditions == 1:
        return f"the one list: every item once, in its one condition ({_count(item_count, 'item')})"
    return (
        f"one of {_count(conditions, 'list')} of a Latin square: every item once, in one of its {conditions} "
        f"conditions, each condition on {_share(item_count, conditions)}"
    )


def _flow(applied: pd.DataFrame, deleted: pd.DataFrame, closed: bool) -> str:
    """Who started (those present, those who withdrew, those deleted on request: a deleted participant's row is gone,
    the deletions log keeps them), and what became of them; pilots are never counted.

    >>> log = pd.DataFrame({"participant_id": ["a", "b", "pilot-s-001"], "deleted_by": ["a", "me", "pilot-s-001"]})
    >>> present = pd.DataFrame({"excluded_by": ["", "not finished", "attention"]})
    >>> _flow(present, log, closed=True).split(";")[0]
    '5 participants started: 1 withdrew, 1 had their data deleted on request, 1 did not finish and 2 finished'
    >>> _flow(present.iloc[[0]], log.iloc[:0], closed=False)
    '1 participant started and 1 finished. '
    """
    real = deleted[~deleted["participant_id"].map(collection.is_pilot).astype(bool)]
    withdrew = int((real["deleted_by"] == real["participant_id"]).sum())
    on_request = len(real) - withdrew
    unfinished = int((applied["excluded_by"] == exclusions.NOT_FINISHED).sum())
    started, finished = len(applied) + len(real), len(applied) - unfinished
    parts = [f"{withdrew:,} withdrew"] if withdrew else []
    parts += [f"{on_request:,} had their data deleted on request"] if on_request else []
    if unfinished:
        parts.append(f"{unfinished:,} did not finish" if closed else f"{unfinished:,} had not finished yet")
    parts.append(f"{finished:,} finished")
    said = f"{_people(started)} started" + (f": {', '.join(parts[:-1])} and {parts[-1]}" if len(parts) > 1 else "")
    if len(parts) == 1:
        said += f" and {parts[0]}"
    if len(real):
        said += "; the answers of those who withdrew or whose data were deleted are neither kept nor analysed"
    return said + ". "


def _excluded(found: Design, log: pd.DataFrame, kept: int, answers: int) -> str:
    """How many each declared rule excluded (in its order, each counting only those no earlier rule excluded), and how
    many participants and answers on target items are left for the analysis."""
    given = f"with {_count(answers, 'answer')} on target items"
    rules = log[log["rule"] != exclusions.NOT_FINISHED]
    if not found.exclusions:
        return (
            "No exclusion criteria were declared with the design, so everyone who finished was analysed: "
            f"{_people(kept)}, {given}. "
        )
    clauses = [
        f"{_people(r.newly_excluded)} who {_rule(found, rule)}"
        + ("" if r.names == r.newly_excluded else f" ({_named(r.names, r.newly_excluded)})")
        for rule, r in zip(found.exclusions, rules.itertuples(), strict=True)
    ]
    listed = clauses[0] if len(clauses) == 1 else "; ".join(clauses[:-1]) + "; and " + clauses[-1]
    return (
        "Following the exclusion criteria declared with the design before data collection, applied in their order, "
        f"we excluded {listed}, leaving {_people(kept)} analysed, {given}. "
    )


def _rule(found: Design, rule: dict) -> str:
    """A declared rule in words, its count of attention checks singular or plural as it should be."""
    if rule["rule"] == "attention":
        return f"failed more than {_count(int(rule['max_failed']), 'attention check')}"
    return found.rule_text(rule)


def _estimate(row) -> str:
    """'a: 0.52 [0.40, 0.63]', or the mean alone saying why no interval was estimated: 'a: 0.52 (no interval: 1
    participant)'.

    >>> row = {"condition": "a", "mean": 0.5, "low": float("nan"), "high": float("nan"), "participants": 2, "items": 12}
    >>> _estimate(next(pd.DataFrame([row]).itertuples()))
    'a: 0.50 (no interval: 2 participants)'
    """
    if pd.notna(row.low) and pd.notna(row.high):
        return f"{row.condition}: {row.mean:.2f} [{row.low:.2f}, {row.high:.2f}]"
    few = [_people(row.participants)] if row.participants < gradient_metrics.MIN_EACH else []
    few += [_count(row.items, "item")] if row.items < gradient_metrics.MIN_EACH else []
    return f"{row.condition}: {row.mean:.2f} (no interval: {', '.join(few) or 'too few answers'})"


def _demographics(found: Design) -> str:
    """What methods.md says of the demographic questions and the debrief: which were asked, never an answer."""
    said = ""
    if found.demographics:
        asked = "; ".join(
            f'"{q.question}" ({q.kind}{", " + ", ".join(q.options) if q.options else ""}'
            f"{', required' if q.required else ', optional'})"
            for q in found.demographics
        )
        said = (
            f"After the last trial, participants answered {_count(len(found.demographics), 'demographic question')}: "
            f"{asked}. "
        )
    return said + ("A debrief was shown after the last answer. " if found.debrief else "")


def _timing(found: Design, answers: pd.DataFrame, kept: set[str]) -> str:
    """What methods.md says of the answers' timing: how response times were measured, their median over the answers
    of the analysed participants (`kept`) only, and leaving the tab; and whether a slider had to be moved."""
    slider = (
        "The slider showed no value, and the answer could not be given, until the participant moved it. "
        if found.scale.kind == "slider" and found.require_movement
        else ""
    )
    if answers.dropna(subset=["rt_ms"]).empty:
        return slider + "No response times were measured (answers given outside a browser)."
    how = (
        "Response times were measured in the participant's browser (performance.now) from the item's display to the "
        "answer (after a reload of the page, from the item's display again)"
    )
    if not kept:
        return slider + how + "; no participant is analysed, so no median is given."
    timed = answers[answers["participant_id"].isin(kept)].dropna(subset=["rt_ms"])
    analysed = f"the {_count(len(kept), 'analysed participant')}"
    if timed.empty:
        return slider + how + f", but none of the answers of {analysed} was timed (answered outside a browser)."
    away = int((timed["left_count"].fillna(0) > 0).sum())
    return slider + (
        f"{how}: median {timed['rt_ms'].median() / 1000:.1f} s over {_count(len(timed), 'answer')} of {analysed}; "
        f"participants left the page (another tab or window) during {away:,} of them."
    )


def analyses(
    con: duckdb.DuckDBPyConnection, study_id: str, formula: str = "", power_key: str | None = None
) -> tuple[str, mixed_models.Fit | None, pd.DataFrame | None]:
    """What the methods section says of the mixed model and the power analysis — the kept fit of `formula` (""
    the default model: the maximal structure the design justifies) on the answers as they are now, its summary, why
    that model and the scale note; the power run `power_key` the researcher chose (None: none is chosen, and the
    text says how many there are and how to choose) — or how to make them; with the fit and the power table
    themselves (None when there are none)."""
    if trial_types.kind_of(con, study_id) != "rating":
        said = (
            "The linear mixed model and the power analysis by simulation are made for rating studies; this study's "
            "trials are analysed as the text above says."
        )
        return said, None, None
    model = mixed_model.chosen(con, study_id, formula=formula or None)
    rows = mixed_model.frame(con, model)
    fitted = mixed_model.kept(con, model)
    note = mixed_model.scale_note(con, study_id)
    if rows.empty:
        said = "No answers to fit a mixed-effects model on yet."
    elif fitted is None:
        said = (
            f"No mixed-effects model `{mixed_model.formula(con, model, rows)}` has been fitted on these answers as "
            f"they are now (`python -m backend study model {study_id}`, or the Study page's *Fit the model*)."
        )
    else:
        why = (
            "the model as the researchers wrote it"
            if formula
            else "the maximal random-effects structure the design justifies (Barr et al. 2013), as proposed by the lab"
        )
        said = (
            f"The model is {why}.\n\n"
            + fitted.summary(mixed_model.groups(rows, model))
            + (f"\n\n{note}" if note else "")
        )
    runs = power_analysis.finished(study_id, con)
    if power_key is None:
        if runs:
            kept = f"{len(runs):,} power {'analysis' if len(runs) == 1 else 'analyses'} of this study kept"
            said += (
                f"\n\n{kept}; none is chosen for this text (choose one on the Study page under Power analysis, or "
                "`python -m backend study export "
                f"{study_id} --power KEY` with a key of: {', '.join(runs)})."
            )
        return said, fitted, None
    found = runs.get(power_key)
    if found is None:
        raise ValueError(f"power: {power_key!r} is not a finished power analysis of {study_id}; there are {list(runs)}")
    table, asked = found["table"], found["request"]
    curve = "; ".join(
        f"{row.contrast} with {row.participants} participants: {row.power:.2f} [{row.low:.2f}, {row.high:.2f}]"
        + (f" ({row.failed} of {row.sims} fits did not converge and are left out)" if row.failed else "")
        for row in table.itertuples()
    )
    power_text = (
        f"Power was estimated by simulation: {int(table['sims'].iloc[0]):,} simulated studies of this design per "
        f"participant count, assuming {asked['source']} ({power_analysis.described(asked['assumed'])}), each "
        f"analysed at α = 0.05 by {table['test'].iloc[0]}. Power per contrast (exact binomial 95% CI): {curve}."
    )
    return said + "\n\n" + power_text, fitted, table


def _named(names: int, newly: int) -> str:
    """What a rule named beside what it excluded, when the two differ (an earlier rule had excluded some).

    >>> _named(5, 2)
    'the rule named 5 participants, 3 of them already excluded by an earlier rule'
    """
    return f"the rule named {_people(names)}, {names - newly:,} of them already excluded by an earlier rule"


def _people(n: int) -> str:
    return _count(n, "participant")


def _count(n: int, noun: str) -> str:
    """'1 item', '2 items', '1,200 answers': a count with its noun, singular or plural as it should be."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _share(items: int, conditions: int) -> str:
    """How many items each condition of a Latin square list has, with the noun.

    >>> _share(4, 4), _share(8, 4), _share(6, 4), _share(3, 4)
    ('1 item', '2 items', '1 or 2 items', 'at most 1 item')
    """
    low, high = items // conditions, -(-items // conditions)
    if low == high:
        return _count(low, "item")
    return f"at most {_count(high, 'item')}" if low == 0 else f"{low:,} or {high:,} items"


def archive(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    platform_ids: bool = False,
    formula: str = "",
    power_key: str | None = None,
) -> dict[str, bytes]:
    """The files for a paper's data archive: responses (long format), the design (YAML as declared, and as read,
    with its version), every participant's list, order seed and trials, the exclusion log, per-participant
    exclusions, condition means before and after, and the methods paragraph. Participants are named by the lab's
    ids only: recruitment platforms' ids and demographic answers are personal data and stay out, unless
    `platform_ids` (the lab's own records: `platform_ids.csv`, participant id → platform id and the parameters kept,
    and `demographics.csv`, participant id → their demographic answers)."""
    row = collection.study(con, study_id)
    record = {k: (str(v) if v is not None else None) for k, v in row.items() if k not in ("design", "design_text")}
    typed = trial_types.tables(con, study_id)  # a forced choice, reading or Maze study's own results
    files = {
        "responses.csv": long_responses(con, study_id),
        "participants.csv": participants(con, study_id),
        "orders.csv": store_studies.orders(con, study_id),
        "exclusions.csv": exclusion_log(con, study_id),
    } | (typed or {"condition_means.csv": condition_means(con, study_id), "item_means.csv": item_means(con, study_id)})
    out = {name: frame.to_csv(index=False).encode() for name, frame in files.items()}
    out["design.yaml"] = row["design_text"].encode()
    out["design.json"] = json.dumps(record | {"design": row["design"]}, indent=2).encode()
    said, fitted, table = analyses(con, study_id, formula, power_key)
    out["methods.md"] = (methods(con, study_id) + "\n\n" + said + "\n").encode()
    if fitted is not None:
        out["model_fixed_effects.csv"] = fitted.fixed.to_csv(index=False).encode()
        out["model_term_tests.csv"] = fitted.terms.to_csv(index=False).encode()
        out["model_pairwise.csv"] = fitted.pairwise.to_csv(index=False).encode()
        out["model_variance_components.csv"] = fitted.variance.to_csv(index=False).encode()
        out["model.json"] = json.dumps(fitted.as_dict(), indent=2).encode()
    if table is not None:
        out["power.csv"] = table.to_csv(index=False).encode()
    if platform_ids:
        out["platform_ids.csv"] = store_studies.platform_ids(con, study_id).to_csv(index=False).encode()
        out["demographics.csv"] = demographics(con, study_id).to_csv(index=False).encode()
    return out


def demographics(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """participant_id, answered_at and one column per demographic question of the design (its name, in the design's
    order; the answer as text, empty when left blank) for every real participant who answered them: personal data,
    for the study's maker or an owner only (`actions.studies.demographics`)."""
    asked = [question.name for question in design(con, study_id).demographics]
    given = store_studies.demographics(con, study_id)
    wide = given.pivot(index="participant_id", columns="name", values="value").reindex(columns=asked)
    when = given.groupby("participant_id")["answered_at"].first()
    table = wide.assign(answered_at=when).reset_index()
    return table.sort_values(["answered_at", "participant_id"], ignore_index=True)[
        ["participant_id", "answered_at", *asked]
    ]


def archive_zip(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    platform_ids: bool = False,
    formula: str = "",
    power_key: str | None = None,
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in archive(con, study_id, platform_ids, formula, power_key).items():
            out.writestr(f"{study_id}/{name}", data)
    return buffer.getvalue()
