"""What the Study page shows and does: the studies, one study's design, links, progress per list, the exclusions
rule by rule, people's condition means before and after them beside the models, per-item means and the archive
(backend.analysis.studies, backend.studies.collection)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import yaml

from backend.actions import jobs as job_actions
from backend.actions import studies as study_actions
from backend.analysis import gradient, mixed_model, power_analysis, studies, trial_types
from backend.analysis.power_analysis import DEFAULT_SIMS, Request  # noqa: F401 — the page's names
from backend.datasets.validation import DataError  # noqa: F401 — the page's names
from backend.execution import jobs
from backend.identity import links
from backend.identity.actor import Actor
from backend.metrics import power
from backend.metrics.gradient import MIN_EACH  # noqa: F401 — the page's names
from backend.metrics.power import TESTS, describe  # noqa: F401 — the page's names
from backend.store import queries
from backend.store.sessions import AUDIT, DATA, reads
from backend.studies import collection
from backend.studies.collection import StudyRefused  # noqa: F401 — the page's names

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "studies"
FAMILY_SET = "stop-study.yaml"  # over the Studio's example family set (its example template, saved as a dataset)
EXAMPLE_ORDER = (FAMILY_SET, "projective-probability.yaml")  # the first whose dataset is in the store is offered


@reads(DATA)
def example(con: duckdb.DuckDBPyConnection) -> dict:
    """The worked example design to start from (data/studies): the first of EXAMPLE_ORDER whose dataset is in the
    store, else the one over the Studio's example family set; {"text", "dataset", "stored": whether its dataset is
    in the store}."""
    loaded = set(queries.dataset_ids(con, with_examples=True))
    shipped = [(name, (EXAMPLES / name).read_text()) for name in EXAMPLE_ORDER if (EXAMPLES / name).is_file()]
    designs = [(text, str(yaml.safe_load(text).get("dataset", ""))) for _, text in shipped]
    text, dataset = next(((t, d) for t, d in designs if d in loaded), designs[0] if designs else ("", ""))
    return {"text": text, "dataset": dataset, "stored": dataset in loaded}


@reads(DATA)
def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return studies.listing(con)


@reads(DATA)
def study(con: duckdb.DuckDBPyConnection, study_id: str) -> dict:
    """The study's row (status, version, frozen, closed) and its design as written."""
    return collection.study(con, study_id)


@reads(DATA)
def progress(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.progress(con, study_id)


@reads(DATA)
def participants(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.participants(con, study_id)


@reads(DATA)
def analysed(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """How many participants the other pages, exports and commands read, and how many each reason leaves out."""
    return studies.analysed(con, study_id)


@reads(DATA)
def exclusion_log(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.exclusion_log(con, study_id)


@reads(DATA)
def condition_means(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.condition_means(con, study_id)


@reads(DATA)
def trial_kind(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    """rating | forced_choice | reading | maze (issue 63, item 6)."""
    return trial_types.kind_of(con, study_id)


@reads(DATA)
def choice_shares(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return trial_types.choice_shares(con, study_id)


@reads(DATA)
def choice_fit(con: duckdb.DuckDBPyConnection, study_id: str) -> tuple[pd.DataFrame, str] | None:
    """The mixed logistic model's table (empty when it did not converge) and its text; None with 3+ options."""
    fitted = trial_types.choice_fit(con, study_id)
    if fitted is None:
        return None
    return (fitted.table() if fitted.converged else pd.DataFrame()), fitted.text()


@reads(DATA)
def region_times(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return trial_types.region_times(con, study_id)


@reads(DATA)
def maze_completed(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return trial_types.maze_completed(con, study_id)


@reads(DATA)
def item_means(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.item_means(con, study_id)


@reads(DATA)
def runs(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    return studies.runs(con, study_id)


@reads(DATA)
def beside_models(con: duckdb.DuckDBPyConnection, study_id: str, run_ids: tuple[str, ...]) -> pd.DataFrame:
    return studies.beside_models(con, study_id, run_ids)


def agreement(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ between each run's and people's condition means (CI over conditions)."""
    return gradient.agreement(table.rename(columns={"condition": "group"}))


@reads(DATA)
def methods(con: duckdb.DuckDBPyConnection, study_id: str) -> str:
    return studies.methods(con, study_id)


def analyses(con: duckdb.DuckDBPyConnection, study_id: str, formula: str = "", power_key: str | None = None) -> str:
    """The methods section's mixed-model and power paragraphs: the kept fit of `formula` ("": the default model) and
    the power run `power_key` (not cached: a job may have just kept a fit or a power run, which no store write
    announces)."""
    return studies.analyses(con, study_id, formula, power_key)[0]


def power_runs(study_id: str) -> dict[str, str]:
    """The study's finished power runs, newest first: a label (key, counts, test, source) → key."""
    found = {}
    for key, run in reversed(power_analysis.finished(study_id).items()):
        asked, table = run["request"], run["table"]
        counts = ", ".join(map(str, sorted(set(table["participants"]))))
        found[f"{key}: {counts} participants; {asked.get('test', 'f1')}; {asked['source']}"] = key
    return found


archive_zip = study_actions.archive_zip  # made when asked for (not cached: who asks is checked each time)


@reads(DATA, AUDIT)  # links are written with the audit: a link made shows at once
def study_links(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """The study's links: person, state, until (no tokens: a link is shown once, when made)."""
    return links.listing(con, collection.object_of(study_id))[["person", "state", "expires_at", "created_by"]]


def create(con: duckdb.DuckDBPyConnection, text: str, replace: bool, *, actor: Actor) -> str:
    return study_actions.create(con, text, "the design", replace, actor=actor)


def make_links(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, count: int, days: float, *, actor: Actor
) -> list[links.Link]:
    return study_actions.make_links(con, store, study_id, count, days, actor=actor)


def close(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> dict:
    return study_actions.close(con, study_id, actor=actor)


@reads(DATA)
def scale(con: duckdb.DuckDBPyConnection, study_id: str) -> list[float]:
    """The study's answer range [min, max] (the charts' axis)."""
    found = collection.design_of(collection.study(con, study_id)).scale
    return [found.min, found.max]


@reads(DATA)
def power_design(con: duckdb.DuckDBPyConnection, study_id: str) -> dict | str:
    """conditions, items and assignment of the study's design, as a power analysis starts from, and the participant
    counts it simulates by default; or why it cannot simulate it (in words)."""
    try:
        found = power_analysis.design(con, study_id)
    except ValueError as exc:
        return str(exc)
    lists = len(found["conditions"]) if found["assignment"] == "latin" else 1
    return found | {"counts": power.default_counts(lists)}


@reads(DATA)
def fitted_studies(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, bool]]:
    """The kept mixed-model fits of studies' answers as they are now, and of their pilots' (assumptions for a power
    analysis): a label → (study, pilot)."""
    found = {}
    for study_id in studies.listing(con)["study_id"]:
        if mixed_model.kept(con, mixed_model.chosen(con, study_id)):
            found[study_id] = (study_id, False)
        piloted = studies.pilots(con, study_id)["answers"] > 0
        if piloted and mixed_model.kept(con, mixed_model.chosen(con, study_id, pilot=True)):
            found[f"{study_id} (pilot answers)"] = (study_id, True)
    return found


@reads(DATA)
def power_request(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    counts: tuple[int, ...],
    sims: int,
    items_count: int,
    analysis: tuple[str, str],
    from_fit: str,
    pilot: bool = False,
) -> power_analysis.Request:
    """A power analysis of the study's design (with `items_count` items) assuming what the kept fit of `from_fit`'s
    answers (with `pilot`, its pilot's) estimates; each simulated study analysed by `analysis` (test, formula)."""
    test, formula = analysis
    return power_analysis.request(
        con, study_id, counts, sims, test=test, formula=formula, items_count=items_count, from_fit=from_fit,
        pilot=pilot,
    )  # fmt: skip


@reads(DATA)
def typed_request(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    counts: tuple[int, ...],
    sims: int,
    items_count: int,
    analysis: tuple[str, str],
    reference: str,
    intercept: float,
    effects: tuple[tuple[str, float], ...],
    sds: tuple[float, float, float, float],
) -> power_analysis.Request:
    """A power analysis of the study's design (with `items_count` items) assuming typed values: the reference
    condition's mean, each other condition's effect, and the SDs of participants, items, slopes and the residual."""
    names = ("sd_participant", "sd_item", "sd_slope", "sd_residual")
    test, formula = analysis
    return power_analysis.request(
        con, study_id, counts, sims, test=test, formula=formula, items_count=items_count, reference=reference,
        intercept=intercept, effects=dict(effects), **dict(zip(names, sds, strict=True)),
    )  # fmt: skip


def describe_assumed(assumed: dict) -> str:
    return power_analysis.described(assumed)


def start_power(store: Path | str, request: power_analysis.Request, *, actor: Actor) -> str:
    return job_actions.start_power(store, request, actor=actor)


def power_status(key: str) -> dict | None:
    """A power run's progress and, once finished, its table (read each time: its job writes it)."""
    return power_analysis.status(key)


def power_latest(study_id: str) -> str | None:
    return power_analysis.latest(study_id)


def power_alive(key: str) -> bool:
    return jobs.alive(key)


def power_last_line(key: str) -> str:
    return jobs.last_line(key)


def pilot_links(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, days: float = 7, *, actor: Actor
) -> list[links.Link]:
    """One pilot link: the researcher takes the study as a participant; stored apart, never analysed."""
    return study_actions.pilot_links(con, store, study_id, 1, days, actor=actor)


def delete_participant(
    con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, reason: str, *, actor: Actor
) -> dict:
    """Delete one participant's data on request: {"responses", "ratings"} deleted."""
    return study_actions.delete_participant(con, study_id, participant_id, reason, actor=actor)


@reads(DATA)
def pilots(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, int]:
    """The study's pilot participants and answers (never analysed)."""
    return studies.pilots(con, study_id)


@reads(DATA)
def deletions(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Whose data were deleted, when, by whom and why (never an answer)."""
    return studies.deletions(con, study_id)


@reads(DATA)
def platform(con: duckdb.DuckDBPyConnection, study_id: str) -> str | None:
    """The name of the recruitment platform the study's design names (prolific, sona, mturk, other), or None."""
    found = collection.design_of(collection.study(con, study_id)).platform
    return None if found is None else found.name


def general_link(
    con: duckdb.DuckDBPyConnection, store: Path, study_id: str, cap: int, days: float, base: str, *, actor: Actor
) -> str:
    """A new general link to the study, starting at most `cap` participants: its URL from `base`, with the
    placeholders its platform fills in (the study's maker or an owner; audited)."""
    made = study_actions.general_link(con, store, study_id, cap, days, actor=actor)
    return collection.general_url(con, study_id, made.url(base))


def platform_ids(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> pd.DataFrame:
    """The participants' platform ids (personal data: the study's maker or an owner; each reading audited)."""
    return study_actions.platform_ids(con, study_id, actor=actor)


def release(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str, *, actor: Actor) -> str:
    """Let a platform id continue in another browser; the participant's id."""
    return study_actions.release(con, study_id, platform_id, actor=actor)


mark_returned = study_actions.mark_returned  # a returned submission frees its place (the maker or an owner)


def archive_with_platform_ids(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> bytes:
    """The archive with platform_ids.csv, for the lab's own records (the study's maker or an owner; audited)."""
    return study_actions.archive_with_platform_ids(con, study_id, actor=actor)


def demographics(con: duckdb.DuckDBPyConnection, study_id: str, *, actor: Actor) -> pd.DataFrame:
    """The participants' answers to the design's demographic questions (personal data: the study's maker or an
    owner; each reading audited)."""
    return study_actions.demographics(con, study_id, actor=actor)
