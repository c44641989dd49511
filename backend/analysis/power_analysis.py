"""A study's power analysis before launch (issue 55, item 3): its design as `metrics.power` simulates it (the
conditions, the target items, Latin square or crossed), the effects and variance components assumed — typed, or
read from a kept mixed-model fit of an earlier study or of this one (`analysis.mixed_model`) — and the simulation
itself, run by `python -m backend study power` (as a job when a page starts it: the page stays usable).

A power run is kept as JSON under `<data_dir>/power/`, named by the study and a hash of what was asked; while it
runs the file holds its progress (done, total, started), at the end its table, so a page shows a progress bar with
the expected time left and then the curve, whoever started it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import pandas as pd

from backend.analysis import mixed_model
from backend.metrics import mixed_models, power
from backend.store import kept as kept_files
from backend.store import studies as store_studies
from backend.store.access import StoreRef
from backend.studies import collection
from backend.studies.design import items

DEFAULT_SIMS = 200
EVERY = 1.0  # seconds between progress writes


@dataclass(frozen=True)
class Request:
    """One power analysis: the study whose design is simulated, what is assumed (and where it came from), the
    participant counts, simulations per count, the seed, and what each simulated study is analysed by (`test`, one
    of `power.TESTS`; `formula`: the model's, "" for `power.analysis_formula`)."""

    study: str
    plan: power.Plan
    assumed: power.Assumed
    source: str  # "typed", or which fit, in words
    fit: str | None = None  # the study or dataset whose kept fit was read (`study power --from-fit`)
    pilot: bool = False  # the kept fit was of that study's pilot answers (`--from-fit NAME --pilot`)
    counts: tuple[int, ...] = ()
    sims: int = DEFAULT_SIMS
    seed: int = 0
    test: str = "model"
    formula: str = ""

    def analysis(self) -> str:
        """What each simulated study was analysed by, in words."""
        return power.test_words(self.test, self.formula or power.analysis_formula(self.assumed))

    def key(self) -> str:
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()
        return f"power-{self.study}-{digest[:12]}"


def arguments(request: Request) -> list[str]:
    """The `python -m backend` arguments that make this request again (a job started from a page runs them)."""
    args = ["study", "power", request.study, "--participants", *map(str, request.counts)]
    args += ["--sims", str(request.sims), "--seed", str(request.seed), "--items", str(request.plan.items)]
    args += ["--test", request.test, *(["--formula", request.formula] if request.formula else [])]
    if request.fit:
        return [*args, "--from-fit", request.fit, *(["--pilot"] if request.pilot else [])]
    given = request.assumed
    args += ["--reference", request.plan.conditions[0], "--intercept", repr(given.intercept)]
    args += ["--effect", *[f"{name}={value!r}" for name, value in given.effects.items()]]
    for name in ("participant", "item", "slope", "residual"):
        args += [f"--sd-{name}", repr(getattr(given, f"sd_{name}"))]
    return args


def request(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    counts: tuple[int, ...] | None = None,
    sims: int = DEFAULT_SIMS,
    seed: int = 0,
    *,
    test: str = "model",
    formula: str = "",
    items_count: int | None = None,
    from_fit: str | None = None,
    pilot: bool = False,
    reference: str | None = None,
    intercept: float | None = None,
    effects: dict[str, float] | None = None,
    sd_participant: float | None = None,
    sd_item: float | None = None,
    sd_slope: float = 0.0,
    sd_residual: float | None = None,
) -> Request:
    """A power analysis of `study_id`'s design: assuming what the kept fit of `from_fit`'s answers (a study or a
    graded dataset's default model; with `pilot`, of that study's pilot answers) estimates, or the typed values (the
    intercept, each other condition's effect against the reference, the SDs); `items_count`: simulate the design with
    that many items instead of its own; `counts` None: `power.default_counts` of the design; each simulated study
    analysed by `test` (`formula` for the model); ValueError naming what is missing or wrong."""
    if test not in power.TESTS:
        raise ValueError(f"test: expected one of {', '.join(power.TESTS)}, got {test!r}")
    bounds = scale(con, study_id)
    if from_fit:
        model = mixed_model.chosen(con, from_fit, pilot=pilot)
        fitted = mixed_model.kept(con, model)
        whose = f"{from_fit}'s pilot answers" if pilot else f"{from_fit}'s answers"
        if fitted is None:
            raise ValueError(
                f"from-fit: there is no kept fit of {whose} as they are now by the default model (the maximal "
                "structure the design justifies, treatment coding); fit it first "
                f"(`python -m backend study model {from_fit}{' --pilot' if pilot else ''}`, or its page)"
            )
        spec = fitted.factors.get(model.condition, {})
        found = plan(con, study_id, spec.get("reference"), items_count)
        assumed = assumed_from_fit(fitted, model.condition, found.conditions, bounds)
        source = (
            f"the mixed-model fit `{fitted.formula}` of {whose} ({fitted.n:,} answers, "
            f"{fitted.groups.get('participant', 0):,} participants; {_not_drawn(fitted)})"
        )
    else:
        found = plan(con, study_id, reference, items_count)
        typed = {"intercept": intercept, "sd-participant": sd_participant, "sd-item": sd_item}
        missing = [name for name, value in (typed | {"sd-residual": sd_residual}).items() if value is None]
        if missing:
            raise ValueError(f"{', '.join(missing)}: needed unless the assumptions come from a fit (from-fit)")
        others = list(found.conditions[1:])
        if set(effects or {}) != set(others):
            raise ValueError(f"effect: give each of {others} (against {found.conditions[0]!r}), got {effects}")
        assumed = power.Assumed(intercept, dict(effects), sd_participant, sd_item, sd_slope, sd_residual, bounds)
        source = "typed"
    counts = power.default_counts(found.lists) if counts is None else counts
    return Request(
        study_id, found, assumed, source, from_fit, bool(from_fit and pilot), tuple(counts), int(sims), int(seed),
        test, formula,
    )  # fmt: skip


def design(con: duckdb.DuckDBPyConnection, study_id: str) -> dict:
    """conditions (sorted), items (target items) and assignment of the study's design, as a power analysis starts
    from; ValueError for a design it cannot simulate."""
    found = collection.design_of(collection.study(con, study_id))
    if found.assignment not in power.ASSIGNMENTS:
        raise ValueError(
            f"assignment: power by simulation draws Latin-square and crossed designs, not {found.assignment!r}"
        )
    grid = items(found, store_studies.example_rows(con, study_id)).grid
    return {"conditions": sorted(str(c) for c in grid.columns), "items": len(grid), "assignment": found.assignment}


def plan(
    con: duckdb.DuckDBPyConnection, study_id: str, reference: str | None = None, items_count: int | None = None
) -> power.Plan:
    """The study's design as the simulation draws it: its conditions (the reference first: `reference`, else the
    first in sorted order), its target items (or `items_count`: the same design with more or fewer items) and its
    assignment; ValueError for a design it cannot simulate."""
    found = design(con, study_id)
    conditions = found["conditions"]
    if reference is not None:
        if reference not in conditions:
            raise ValueError(f"reference: {reference!r} is not a condition of {study_id}: {conditions}")
        conditions = [reference, *[c for c in conditions if c != reference]]
    count = found["items"] if items_count is None else items_count
    return power.Plan(tuple(conditions), count, found["assignment"])


def scale(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[float, float]:
    found = collection.design_of(collection.study(con, study_id)).scale
    return float(found.min), float(found.max)


def assumed_from_fit(
    fit: mixed_models.Fit, condition: str, conditions: tuple[str, ...], bounds: tuple[float, float]
) -> power.Assumed:
    """What a fit estimates, as the simulation's assumptions: the intercept and each condition's effect against the
    reference (treatment coding, the fit's reference first in `conditions`), the participants' and items' intercept
    SDs, the mean SD of the by-participant slopes (0 without slopes) and the residual SD; answers clipped to
    `bounds`. The simulation draws slopes uncorrelated: the fit's correlations are not assumed (the request's source
    says so)."""
    if not fit.converged:
        raise ValueError("fit: it did not converge, so it has no estimates to assume; fit a simpler model first")
    spec = fit.factors.get(condition)
    if spec is None or spec["coding"] != "treatment":
        raise ValueError(f"fit: power reads {condition}'s effects against a reference; refit with treatment coding")
    if conditions[0] != spec["reference"]:
        raise ValueError(f"fit: its reference is {spec['reference']!r}, the design's first condition {conditions[0]!r}")
    fixed = fit.fixed.set_index("term")["estimate"]
    effects = {}
    for level in conditions[1:]:
        term = f"{condition}{level}"
        if term not in fixed.index:
            raise ValueError(f"fit: it has no effect of {level!r} (its terms are {list(fixed.index)})")
        effects[level] = float(fixed[term])
    variance = fit.variance
    missing = {"participant", "item"} - set(variance["group"])
    if missing:
        raise ValueError(f"fit: it has no random intercepts by {sorted(missing)[0]}, which the simulation draws")
    sd = {group: variance[variance["group"] == group] for group in ("participant", "item", "Residual")}
    slopes = sd["participant"][sd["participant"]["term"] != mixed_models.INTERCEPT]["sd"]
    return power.Assumed(
        intercept=float(fixed[mixed_models.INTERCEPT]),
        effects=effects,
        sd_participant=float(sd["participant"].loc[sd["participant"]["term"] == mixed_models.INTERCEPT, "sd"].iloc[0]),
        sd_item=float(sd["item"].loc[sd["item"]["term"] == mixed_models.INTERCEPT, "sd"].iloc[0]),
        sd_slope=float(slopes.mean()) if len(slopes) else 0.0,
        sd_residual=float(sd["Residual"]["sd"].iloc[0]),
        scale=bounds,
    )


def _not_drawn(fit: mixed_models.Fit) -> str:
    """What of a fit the simulation does not draw as fitted (its generating model has participant and item
    intercepts and uncorrelated by-participant slopes of one SD), in words."""
    variance = fit.variance[fit.variance["group"] != "Residual"]
    slopes = variance[(variance["group"] == "participant") & (variance["term"] != mixed_models.INTERCEPT)]
    said = ["by-participant slopes drawn with their mean SD, uncorrelated"] if len(slopes) > 1 else []
    said += ["slopes drawn uncorrelated"] if len(slopes) == 1 and len(fit.correlations) else []
    left = variance[~variance["group"].isin(["participant", "item"]) | (
        (variance["group"] == "item") & (variance["term"] != mixed_models.INTERCEPT)
    )]  # fmt: skip
    if len(left):
        said.append("not drawn: " + ", ".join(f"{g} {t}" for g, t in zip(left["group"], left["term"], strict=True)))
    return "; ".join(said) or "drawn as fitted"


def _folder(store: StoreRef = None) -> Path:
    """The power runs kept beside `store` (None: the configured store)."""
    return kept_files.folder("power", store)


def path(key: str, store: StoreRef = None) -> Path:
    return _folder(store) / f"{key}.json"


def run(request: Request, store: StoreRef = None) -> pd.DataFrame:
    """Simulate and keep beside `store`: the table of `metrics.power.simulate` (participants, contrast, sims,
    significant, power, low, high, test), written to the run's file at the end; progress written as it goes."""
    target = path(request.key(), store)
    target.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "request": _plain(request),
        "started": time.time(),
        "done": 0,
        "total": request.sims * len(request.counts),
    }
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.time() - last[0] >= EVERY or done == total:
            last[0] = time.time()
            _write(target, record | {"done": done, "total": total})

    _write(target, record)
    table = power.simulate(
        request.plan, request.assumed, list(request.counts), request.sims, request.seed, progress=progress,
        test=request.test, formula=request.formula or None,
    )  # fmt: skip
    _write(target, record | {"done": record["total"], "finished": time.time(), "table": table.to_dict("records")})
    return table


def described(assumed: dict) -> str:
    """A kept run's assumptions (its request's `assumed`, as JSON keeps it) in words."""
    scale = assumed.get("scale")
    return power.describe(power.Assumed(**(assumed | {"scale": tuple(scale) if scale else None})))


def _plain(request: Request) -> dict:
    return json.loads(json.dumps(asdict(request), default=str))


def _write(target: Path, record: dict) -> None:
    partial = target.with_suffix(f".{os.getpid()}.part")  # written whole, then renamed: a reader never sees half
    partial.write_text(json.dumps(record))
    partial.replace(target)


def status(key: str, store: StoreRef = None) -> dict | None:
    """A power run's state: done, total, seconds, eta (seconds left at the rate so far; None when finished or not
    yet known), the request, and its table once finished (else None); None when no such run was started here."""
    target = path(key, store)
    if not target.is_file():
        return None
    record = json.loads(target.read_text())
    end = record.get("finished") or time.time()
    seconds, done, total = end - record["started"], record["done"], record["total"]
    rate = done / seconds if seconds > 0 and done else 0.0
    table = pd.DataFrame(record["table"]) if "table" in record else None
    eta = (total - done) / rate if rate and table is None else None
    return {"done": done, "total": total, "seconds": seconds, "eta": eta, "request": record["request"], "table": table}


def finished(study_id: str, store: StoreRef = None) -> dict[str, dict]:
    """The study's finished power runs, oldest first: key → `status` (each file read once)."""
    found = {key: status(key, store) for key in _keys(study_id, store)}
    return {key: run for key, run in found.items() if run is not None and run["table"] is not None}


def _keys(study_id: str, store: StoreRef = None) -> list[str]:
    folder = _folder(store)
    found = sorted(folder.glob(f"power-{study_id}-*.json"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    return [p.stem for p in found if p.stem.rsplit("-", 1)[0] == f"power-{study_id}"]


def latest(study_id: str, store: StoreRef = None) -> str | None:
    """The key of the study's most recently started power run, or None."""
    keys = _keys(study_id, store)
    return keys[-1] if keys else None
