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

from backend.analysis import gradient, mixed_model, power_analysis
from backend.metrics import gradient as gradient_metrics
from backend.metrics import mixed_models, power
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
    """Per list: participants who started, who finished, and answers given."""
    people = store_studies.participants(con, study_id)
    table = people.groupby("list_no").agg(
        started=("participant_id", "size"),
        finished=("finished_at", lambda s: int(s.notna().sum())),
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
    was measured) and whom the exclusions leave out (excluded_by; '' when kept)."""
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
    return frame[[*columns, "answered_at", "moved", "rt_ms", "left_count", "left_ms", "excluded_by"]]


def methods(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """A methods paragraph with the study's numbers filled in (design, lists, order, scale, exclusions, means)."""
    row = collection.study(con, study_id)
    found, rated, kept_rows, applied = _rated(con, study_id)
    log = exclusions.log(found, *collection.responses_of(con, study_id))
    means = _means(rated, kept_rows)
    after = means[means["stage"] == AFTER]
    finished = int((applied["excluded_by"] != exclusions.NOT_FINISHED).sum())
    kept, answers = len(exclusions.kept(applied)), len(kept_rows)
    grid = items(found, store_studies.example_rows(con, study_id))
    conditions, item_count = len(grid.grid.columns), len(grid.grid)
    assignment = {
        "latin": f"one of {conditions} lists of a Latin square: every item once, in one of its {conditions} "
        f"conditions, each condition on {_share(item_count, conditions)} items",
        "crossed": f"every item in every condition ({item_count * conditions} trials)",
        "random": f"{found.k} items drawn at random, conditions rotated from a random start",
    }[found.assignment]
    scale = found.scale
    if scale.kind == "choice":
        answered = "choosing one of " + ", ".join(f"'{label}' ({value:g})" for label, value in scale.options)
    else:
        ends = f" ('{scale.left}' to '{scale.right}')" if scale.left or scale.right else ""
        kind = "a slider" if scale.kind == "slider" else f"a {len(scale.points)}-point scale"
        answered = f"on {kind} from {scale.min:g} to {scale.max:g}{ends}"
    extras = []
    if grid.controls:
        extras.append(f"{len(grid.controls)} control items (expected answer {found.controls['expected']})")
    if found.attention:
        extras.append(f"{len(found.attention)} attention check(s)")
    if found.practice:
        extras.append(f"after {len(found.practice)} practice item(s)")
    rules = [
        f"{r.declared} ({_named(r.names, r.newly_excluded)})"
        for r in log.itertuples()
        if r.rule != exclusions.NOT_FINISHED
    ]
    results = "; ".join(f"{r.condition}: {r.mean:.2f} [{r.low:.2f}, {r.high:.2f}]" for r in after.itertuples())
    return (
        f"Study {study_id} (design version {row['version']}, frozen at its first response"
        f"{' on ' + format(row['frozen_at'], '%Y-%m-%d') if row['frozen_at'] is not None else ''}) showed items of "
        f"the dataset {found.dataset}"
        f"{' (split ' + found.split + ')' if found.split else ''}. Each participant saw {assignment}"
        f"{', plus ' + ', '.join(extras) if extras else ''}, in an order randomised per participant "
        f"(seed recorded{', no two items of one ' + found.separate + ' in a row' if found.separate else ''}). "
        f'They answered the question "{found.question}" (filled in from each item) {answered}. '
        f"{_people(len(applied))} started and {finished} finished. Following the exclusion criteria declared "
        f"with the design before data collection, "
        + ("we excluded participants who " + "; who ".join(rules) if rules else "no rule excluded anyone")
        + f", leaving {_people(kept)} and {answers:,} answers on target items. Mean answer per condition "
        f"(95% CI, bootstrap over participants and items together): {results or 'no answers yet'}. "
        + _demographics(found)
        + _timing(found, collection.responses_of(con, study_id)[1])
    )


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
            f"After the last trial, participants answered {len(found.demographics)} demographic question(s): {asked}. "
        )
    return said + ("A debrief was shown after the last answer. " if found.debrief else "")


def _timing(found: Design, answers: pd.DataFrame) -> str:
    """What methods.md says of the answers' timing: how response times were measured, their median, and leaving the
    tab; and whether a slider had to be moved."""
    slider = (
        "The slider showed no value, and the answer could not be given, until the participant moved it. "
        if found.scale.kind == "slider" and found.require_movement
        else ""
    )
    timed = answers.dropna(subset=["rt_ms"])
    if timed.empty:
        return slider + "No response times were measured (answers given outside a browser)."
    away = int((timed["left_count"].fillna(0) > 0).sum())
    n = len(timed)
    return slider + (
        "Response times were measured in the participant's browser (performance.now) from the item's display to the "
        f"answer: median {timed['rt_ms'].median() / 1000:.1f} s over {n:,} answer{'' if n == 1 else 's'}; "
        f"participants left the page (another tab or window) during {away:,} of them."
    )


def analyses(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[str, mixed_models.Fit | None, pd.DataFrame | None]:
    """What the methods section says of the mixed model and the power analysis — the kept fit of the answers as
    they are now (its summary, the scale note) and the study's latest finished power run — or how to make them;
    with the fit and the power table themselves (None when there are none)."""
    fitted = mixed_model.kept(con, mixed_model.chosen(con, study_id))
    note = mixed_model.scale_note(con, study_id)
    if fitted is None:
        model = (
            f"No mixed-effects model has been fitted on these answers yet (`python -m backend study model {study_id}`, "
            "or the Study page's *Fit the model*)."
        )
    else:
        model = fitted.summary() + (f"\n\n{note}" if note else "")
    key = power_analysis.latest(study_id)
    found = power_analysis.status(key) if key else None
    table = found["table"] if found else None
    if table is None:
        return model, fitted, None
    given = found["request"]["assumed"]
    curve = "; ".join(
        f"{row.contrast} with {row.participants} participants: {row.power:.2f} [{row.low:.2f}, {row.high:.2f}]"
        for row in table.itertuples()
    )
    sds = ", ".join(f"{name} {given['sd_' + name]:.3g}" for name in ("participant", "item", "slope", "residual"))
    power_text = (
        f"Power was estimated by simulation: {int(table['sims'].iloc[0]):,} simulated studies per participant count "
        f"of this design, assuming {found['request']['source']} (intercept {given['intercept']:.3g}, effects "
        f"{given['effects']}, SDs {sds}), each analysed by {power.TEST} at α = 0.05. Power per contrast (exact "
        f"binomial 95% CI): {curve}."
    )
    return model + "\n\n" + power_text, fitted, table


def _named(names: int, newly: int) -> str:
    """'5 participants, 2 of them not excluded by an earlier rule' (one number when the two are the same).

    >>> _named(5, 2), _named(4, 4)
    ('5 participants, 2 of them not excluded by an earlier rule', '4 participants')
    """
    return _people(names) if names == newly else f"{_people(names)}, {newly:,} of them not excluded by an earlier rule"


def _people(n: int) -> str:
    return f"{n:,} participant{'' if n == 1 else 's'}"


def _share(items: int, conditions: int) -> str:
    low, high = items // conditions, -(-items // conditions)
    return f"{low}" if low == high else f"{low} or {high}"


def archive(con: duckdb.DuckDBPyConnection, study_id: str, platform_ids: bool = False) -> dict[str, bytes]:
    """The files for a paper's data archive: responses (long format), the design (YAML as declared, and as read,
    with its version), every participant's list, order seed and trials, the exclusion log, per-participant
    exclusions, condition means before and after, and the methods paragraph. Participants are named by the lab's
    ids only: recruitment platforms' ids and demographic answers are personal data and stay out, unless
    `platform_ids` (the lab's own records: `platform_ids.csv`, participant id → platform id and the parameters kept,
    and `demographics.csv`, participant id → their demographic answers)."""
    row = collection.study(con, study_id)
    record = {k: (str(v) if v is not None else None) for k, v in row.items() if k not in ("design", "design_text")}
    files = {
        "responses.csv": long_responses(con, study_id),
        "participants.csv": participants(con, study_id),
        "orders.csv": store_studies.orders(con, study_id),
        "exclusions.csv": exclusion_log(con, study_id),
        "condition_means.csv": condition_means(con, study_id),
        "item_means.csv": item_means(con, study_id),
    }
    out = {name: frame.to_csv(index=False).encode() for name, frame in files.items()}
    out["design.yaml"] = row["design_text"].encode()
    out["design.json"] = json.dumps(record | {"design": row["design"]}, indent=2).encode()
    said, fitted, table = analyses(con, study_id)
    out["methods.md"] = (methods(con, study_id) + "\n\n" + said + "\n").encode()
    if fitted is not None:
        out["model_fixed_effects.csv"] = fitted.fixed.to_csv(index=False).encode()
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


def archive_zip(con: duckdb.DuckDBPyConnection, study_id: str, platform_ids: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in archive(con, study_id, platform_ids).items():
            out.writestr(f"{study_id}/{name}", data)
    return buffer.getvalue()
