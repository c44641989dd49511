"""A mixed-effects model of people's graded answers (issues 55 and 62): a study's (its analysed participants,
`studies.collection.analysed`) or a graded dataset's whose rater ids name one person across items (not
CommitmentBank's, numbered per item). The researcher writes the model in lme4's syntax over the data's own columns
(`frame`: participant, item, value and every facet by its name, e.g. predicate, content, prior); without one, the
maximal random-effects structure the design justifies (`default_formula`, Barr et al. 2013). Fitted by
`metrics.mixed_models` (mixedlm, checked against lme4 and lmerTest).

A fit takes seconds, so it runs as a job (`python -m backend study model NAME`, started by a page through
`actions.jobs.start_model`) and is kept as JSON under `<data_dir>/fits/`, keyed by the data version: the SHA-256 of
the very rows it is fitted on and of the model's options. A page shows the kept fit of the data it shows, or offers
to start one — it never fits while rendering; a new answer, a closed study or a re-ingested dataset is a new
version.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import pandas as pd

from backend.analysis import gradient
from backend.metrics import mixed_models
from backend.store import kept as kept_files
from backend.store import studies as store_studies
from backend.store.access import StoreRef, opener
from backend.studies import collection

VERSION = "2"  # bump when what a kept fit holds changes: older ones are then fitted again (2: formulas, mixedlm)
EXAMPLE = "example"  # the item facet of a dataset whose examples are its items
CODINGS = mixed_models.CODINGS
FIXED = ("participant", "item", "value")  # the frame's columns besides the facets


@dataclass(frozen=True)
class Model:
    """What is fitted: on `dataset`'s ratings in `split` (None: every split), `formula` in lme4's syntax over the
    frame's columns ("": the maximal structure for `condition` the design justifies), each factor in `coding` with
    `reference` as the condition's reference level ("": the coding's default); the facet `item` gives the item
    column (EXAMPLE: each example); with `pilot`, a study's pilot answers instead of its analysed participants' (for
    a power analysis's assumptions before launch)."""

    dataset: str
    condition: str
    item: str
    split: str | None = None
    formula: str = ""
    coding: str = "treatment"
    reference: str = ""
    pilot: bool = False

    def label(self) -> str:
        where = f" (split {self.split})" if self.split else ""
        return f"{self.condition}{where}{' — pilot answers' if self.pilot else ''}"


def choices(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[Model]:
    """The models the dataset's answers support: a study's condition; a graded dataset's each grouping facet in the
    split people are read from, and its prior facet in the prior's split. ValueError saying why when none can be
    fitted (no graded ratings, or rater ids that do not name one person across items)."""
    rule = gradient.spec(con, dataset_id)
    if not rule:
        raise ValueError(f"dataset {dataset_id!r} has no graded ratings; choose one of {gradient.datasets(con)}")
    if rule.get("raters") == "per item":
        raise ValueError(
            f"{dataset_id}'s rater ids are numbered within each item, so they do not name one person across items: "
            "a mixed model needs participants as random effects, and this file does not say who they are"
        )
    row = store_studies.study(con, dataset_id)
    if row is not None:
        found = collection.design_of(row)
        return [Model(dataset_id, found.condition, found.item)]
    item = rule.get("item", EXAMPLE)
    models = [Model(dataset_id, by, item, rule.get("split")) for by in rule["by"] if by != item]
    if rule.get("prior"):
        models.append(Model(dataset_id, rule["prior"], item, rule.get("prior_split")))
    return models


def chosen(con: duckdb.DuckDBPyConnection, dataset_id: str, condition: str | None = None, **options) -> Model:
    """The dataset's model with `condition` as its fixed effect (None: the first of `choices`), with `options`
    (formula, coding, reference, pilot); ValueError naming what can be chosen, and FormulaError naming a formula's
    term that is not a column."""
    found = choices(con, dataset_id)
    pick = [m for m in found if condition in (None, m.condition)]
    if not pick:
        names = [m.condition for m in found]
        raise ValueError(f"condition: {dataset_id} is modelled by one of {names}, not {condition!r}")
    if options.get("coding", "treatment") not in CODINGS:
        raise ValueError(f"coding: expected one of {', '.join(CODINGS)}, got {options['coding']!r}")
    if options.get("pilot"):
        if store_studies.study(con, dataset_id) is None:
            raise ValueError(f"pilot: {dataset_id} is not a study, so it has no pilot answers")
        if not store_studies.pilots(con, dataset_id)["answers"]:
            raise ValueError(
                f"pilot: {dataset_id} has no pilot answers; make pilot links "
                f"(`python -m backend study links {dataset_id} --pilot`, or the Study page's Make a pilot link) and "
                "answer them"
            )
    model = Model(**(asdict(pick[0]) | {k: v for k, v in options.items() if v is not None}))
    if model.formula:
        mixed_models.parsed_formula(model.formula, columns(con, model))
    return model


def frame(con: duckdb.DuckDBPyConnection, model: Model) -> pd.DataFrame:
    """participant, item, value and each facet of the dataset by its name (the condition among them): the ratings
    the model is fitted on (a study's analysed participants, or its pilot's; controls left out), in a fixed order."""
    ratings = gradient.pilot_ratings(con, model.dataset) if model.pilot else gradient.ratings(con, model.dataset)
    if model.split is not None:
        ratings = ratings[ratings["split"] == model.split]
    items = ratings["item"] if model.item == EXAMPLE else ratings[gradient.facet_column(model.item)]
    out = pd.DataFrame({"participant": ratings["rater"].astype(str), "item": items.astype(str)})
    for facet in _facets(con, model):
        out[facet] = ratings[gradient.facet_column(facet)].astype(str)
    out["value"] = ratings["value"].astype(float)
    return out.sort_values(list(out.columns), ignore_index=True)


def columns(con: duckdb.DuckDBPyConnection, model: Model) -> list[str]:
    """The columns a formula may name."""
    return [*FIXED[:2], *_facets(con, model), FIXED[2]]


def _facets(con: duckdb.DuckDBPyConnection, model: Model) -> list[str]:
    """The dataset's facets in its ratings, the condition first; those that vary, and none named like FIXED."""
    rule = gradient.spec(con, model.dataset)
    keys = dict.fromkeys([model.condition, *rule["by"], *[rule[k] for k in ("prior", "item") if rule.get(k)]])
    return [k for k in keys if k not in FIXED and not k.startswith("_")]


def formula(con: duckdb.DuckDBPyConnection, model: Model, rows: pd.DataFrame | None = None) -> str:
    """The formula fitted: the model's own, or the maximal structure for its condition over participants and items."""
    if model.formula:
        return model.formula
    rows = frame(con, model) if rows is None else rows
    return default_formula(rows, model)


def default_formula(rows: pd.DataFrame, model: Model) -> str:
    """`value ~ condition + (1 + condition | participant) + (1 + condition | item)`, each slope where the design
    has the condition vary within that grouping factor (mixed_models.maximal)."""
    return mixed_models.maximal(rows, "value", [model.condition], ["participant", "item"])


def groups(rows: pd.DataFrame, model: Model) -> dict[str, str]:
    """What each column that can group answers is, in words: 'item: the 20 content values'."""
    described = {"participant": f"the {rows['participant'].nunique():,} people who answered"}
    what = "examples" if model.item == EXAMPLE else f"{model.item} values"
    described["item"] = f"the {rows['item'].nunique():,} {what}"
    for facet in rows.columns.drop(list(FIXED)):
        described[facet] = f"the {rows[facet].nunique():,} {facet} values"
    return described


def version(rows: pd.DataFrame, model: Model) -> str:
    """The data version: SHA-256 of the rows and the model's options (and this module's VERSION)."""
    digest = hashlib.sha256(rows.to_csv(index=False).encode())
    digest.update(json.dumps([VERSION, asdict(model)], sort_keys=True).encode())
    return digest.hexdigest()


def path(model: Model, data_version: str, store: StoreRef = None) -> Path:
    """Where the fit of this version is kept: beside the store (`store.kept`)."""
    name = f"{model.dataset}-{model.condition}{'-pilot' if model.pilot else ''}"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return kept_files.folder("fits", store) / f"{safe}-{data_version[:16]}.json"


def kept(con: duckdb.DuckDBPyConnection, model: Model) -> mixed_models.Fit | None:
    """The kept fit of the model on the data as it is now, or None when it has not been fitted on this version."""
    return load(path(model, version(frame(con, model), model), con))


def load(target: Path) -> mixed_models.Fit | None:
    """The fit kept at `target`, or None when there is none (or it was kept by an older version of this module)."""
    if not target.is_file():
        return None
    found = json.loads(target.read_text())
    return mixed_models.Fit.from_dict(found["fit"]) if found.get("version") == VERSION else None


def fit(store: StoreRef, model: Model) -> tuple[mixed_models.Fit, Path]:
    """Fit the model on the data as it is now (the store is read, then closed while fitting) and keep the fit; the
    fit and where it is kept. A kept fit of the same version is returned as it is."""
    with opener(store)() as con:
        rows = frame(con, model)
    target = path(model, version(rows, model), store)
    if (found := load(target)) is not None:
        return found, target
    reference = {model.condition: model.reference} if model.reference else {}
    written = model.formula or default_formula(rows, model)
    found = mixed_models.fit(rows, written, coding=model.coding, reference=reference)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.part")  # written whole, then renamed: a reader never sees half
    partial.write_text(json.dumps({"version": VERSION, "model": asdict(model), "fit": found.as_dict()}))
    partial.replace(target)
    return found, target


def scale_note(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """What a model's output says of the answers' scale: a rating scale of a few points (a study's likert or choice
    scale, or whole-number ends like CommitmentBank's −3…+3) is treated as interval."""
    row = store_studies.study(con, dataset_id)
    if row is not None:
        scale = collection.design_of(row).scale
        count = {"likert": len(scale.points), "choice": len(scale.options)}.get(scale.kind)
    else:
        low, high = gradient.spec(con, dataset_id)["scale"]
        whole = float(low).is_integer() and float(high).is_integer() and 1 < high - low <= 10
        count = int(high - low) + 1 if whole else None
    if not count:
        return ""
    return (
        f"The answers are on a {count}-point scale: the linear model treats it as an interval scale (equal steps). "
        "No ordinal mixed model (R's ordinal::clmm) is offered: no well-kept Python library fits one here."
    )
