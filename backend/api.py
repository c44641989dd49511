"""The lab from a notebook or a script: the store as DataFrames, the pages' metrics, imports.

    from backend.api import Lab
    lab = Lab()                                   # the configured store ($PLAB_STORE or data/presupposition_lab.duckdb)
    lab.datasets()                                # loaded datasets: task, labels, headline splits, counts
    lab.examples("nope", split="main", trigger_type=["clefts"])
    lab.runs("nope")                              # complete runs with provenance
    lab.predictions("nope/RoBERTa-large/mnli-snli-anli-fever/1")   # joined with the examples
    lab.metrics("nope", "nope/baseline/always-E", split="main")    # accuracy, macro-F1 with 95% CIs
    lab.leaderboard()                             # the Overview's headline table
    lab.card("RoBERTa-large")                     # its model card: every headline metric against its baseline
    lab.gradient("commitmentbank", by="verb")     # people's mean rating per verb (and any run's) with 95% CIs
    lab.import_run(frame, dataset="nope", model="mine")            # a DataFrame as a run → its Report
    lab.study_create("data/studies/stop-study.yaml")                # a judgement study; study_links, study_status,
                                                                   # study_beside, study_close, study_export
    lab.study_model("stop-study")                 # mixed model, participants and items random (a Fit; .summary())
    lab.study_power("stop-study", counts=(20, 40), from_fit="stop-study")   # power per contrast, with 95% CIs

Every call opens the store for that call only (`backend.store.access`), so a notebook works while
the dashboard runs, and what it imports shows in the dashboard at its next rerun.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from backend.actions import runs as run_actions
from backend.actions import studies as study_actions
from backend.analysis import evaluation, gradient, leaderboard, mixed_model, power_analysis, slicing, studies
from backend.datasets.catalogue import describe, described
from backend.harnesses import logs
from backend.identity.actor import Actor, local
from backend.imports import predictions as imports
from backend.imports.check_report import Report
from backend.models import contamination
from backend.store import examples as store_examples
from backend.store import queries
from backend.store import runs as store_runs
from backend.store.access import session
from backend.store.connection import store_path
from backend.store.examples import Slice
from backend.store.ids import pasted
from backend.views import cards


class Lab:
    """`actor`: who the notebook's writes are by (default: the local user, `identity.actor.local()`, as the owner of
    their own machine's store, named once here); on a lab server's store, pass the identity whose role the writes
    must stay within (a server process refuses the local owner)."""

    def __init__(self, store: Path | str | None = None, actor: Actor | None = None):
        self.store = store
        self.actor = actor or local()

    def _session(self):
        return session(self.store)

    def datasets(self) -> pd.DataFrame:
        """One row per loaded dataset: title, examples, licence, and its description (task, labels, positive
        label, headline splits, facets, whether you imported it)."""
        with self._session() as con:
            loaded, found = queries.loaded_datasets(con), described(con)
        info = pd.DataFrame(
            [
                {
                    "dataset_id": i,
                    "task": d.task,
                    "labels": list(d.labels),
                    "positive": d.positive,
                    "headline_splits": list(d.headline_splits),
                    "facets": list(d.facets),
                    "user": d.user,
                }
                for i, d in found.items()
            ],
            columns=_DESCRIPTION_COLUMNS,
        )
        return loaded[["dataset_id", "title", "examples", "license"]].merge(info, on="dataset_id", how="left")

    def examples(self, dataset: str, **facets) -> pd.DataFrame:
        """The dataset's examples, filtered by facets (`split="main"`, `trigger_type=["clefts", "stop"]`, and a
        user dataset's own columns as `**{"extra.genre": "news"}`), with `extra` (the other fields, as JSON)."""
        dataset = pasted(dataset)
        with self._session() as con:
            describe(con, dataset)
            frame = store_examples.slice_frame(con, _slice(dataset, facets), limit=None)[_EXAMPLE_COLUMNS]
            extra = queries.extra_json(con, dataset)
        return frame.merge(extra, on="example_id", how="left")  # extra: every other field, as JSON text

    def runs(self, dataset: str) -> pd.DataFrame:
        """Complete runs of the dataset: model, task, source (import | baseline | batch | user), seed, provenance."""
        with self._session() as con:
            return contamination.runs_frame(con, pasted(dataset))

    def predictions(self, run_id: str, **facets) -> pd.DataFrame:
        """A run's predictions joined with its examples (gold label, facets, text), filtered by facets."""
        run_id = pasted(run_id)
        with self._session() as con:
            dataset = _dataset_of(con, run_id)
            frame = store_examples.slice_frame(con, _slice(dataset, facets, run_id), limit=None)
            probs = queries.probs_of(con, run_id)
        frame = frame.rename(
            columns={"label_a": "label", "p_a": "prob_label", "correct_a": "correct", "answer_a": "answer"}
        )
        return frame.drop(columns=[c for c in frame.columns if c.endswith("_b")]).merge(
            probs, on="example_id", how="left"
        )

    def metrics(self, dataset: str, run_id: str, **facets) -> dict:
        """What Explore shows for a slice: n, accuracy and macro-F1 (value, 95% CI, n), confusion, label shares."""
        with self._session() as con:
            return slicing.slice_summary(con, _slice(pasted(dataset), facets, pasted(run_id))).as_dict()

    def evaluate(self, dataset: str, runs: list[str] | None = None) -> dict[str, pd.DataFrame]:
        """What `python -m backend evaluate` prints, as DataFrames by title: per run and split for a classification
        dataset, and per group (people and each run, ρ, prior effect) for one with graded ratings (projective
        probability per predicate; CommitmentBank per verb and operator, beside its classification tables)."""
        with self._session() as con:
            return evaluation.evaluate(con, pasted(dataset), runs)

    def gradient(self, dataset: str, by: str | None = None, runs: list[str] | None = None) -> pd.DataFrame:
        """The Gradient page's table: people's mean certainty per group (by: a facet of the dataset's gradient
        spec, the first by default) with a 95% CI, and each run's on the same scale."""
        with self._session() as con:
            return gradient.certainty(con, pasted(dataset), by, tuple(pasted(r) for r in runs or ()))

    def card(self, model: str) -> pd.DataFrame:
        """The model card: per dataset and split its headline metric with n and CI, the best trivial baseline and
        the verdict (below / not different from / above baseline, by a paired test), contamination, unparsed
        responses, agreement with people."""
        with self._session() as con:
            return cards.card(con, pasted(model))

    def leaderboard(self) -> pd.DataFrame:
        """The Overview's table: each run's headline metric per dataset and split, with n and 95% CI."""
        with self._session() as con:
            return leaderboard.headline(con)

    def import_run(self, frame: pd.DataFrame | Path | str, dataset: str, replace: bool = False, **options) -> Report:
        """Import predictions (a DataFrame or a file: CSV … Parquet, an lm-eval samples JSONL, an Inspect .eval log)
        as a run; returns the validation report.

        `options` are those of `backend.imports.predictions.Options` (model, run_id, columns, label_order,
        label_map, task, split, match, strict, notes, revision). Nothing is written when the report has
        problems (`report.ok` is False; `report.table()` lists them).
        """
        log = logs.read_log(frame, name=options.pop("name", None))
        opts = imports.Options(dataset=dataset, **options)
        with self._session() as con:
            plan = logs.plan(con, log, opts)
            if plan.report.ok:
                run_actions.save(con, plan, replace, actor=self.actor)
        return plan.report

    def delete_run(self, run_id: str) -> None:
        """Delete a run you imported."""
        with self._session() as con:
            run_actions.delete(con, pasted(run_id), actor=self.actor)

    def study_create(self, design: str | Path, replace: bool = False) -> str:
        """A judgement study from a design (a YAML file, or its text; README: Studies); its id."""
        path = Path(design) if isinstance(design, Path) or str(design).endswith((".yaml", ".yml")) else None
        text = path.read_text() if path else str(design)
        with self._session() as con:
            return study_actions.create(con, text, str(path or "the design"), replace, actor=self.actor)

    def study_links(self, study: str, count: int, base_url: str = "http://localhost:8501", days: float = 30):
        """`count` signed links to the study, one participant each: DataFrame of participant and URL."""
        with self._session() as con:
            made = study_actions.make_links(con, store_path(self.store), study, count, days, actor=self.actor)
        return pd.DataFrame({"participant": [m.person for m in made], "url": [m.url(base_url) for m in made]})

    def study_status(self, study: str) -> dict[str, pd.DataFrame | str]:
        """Per list (participants started, finished, answers), per participant (with the rule that excludes
        them), the exclusion log, and people's mean answer per condition before and after the exclusions (a forced
        choice, reading or Maze study: its own results, each by what it is); "analysed" says how many participants
        every page and export reads, and how many each reason leaves out."""
        with self._session() as con:
            return {
                "analysed": studies.analysed(con, study),
                "lists": studies.progress(con, study),
                "participants": studies.participants(con, study),
                "exclusions": studies.exclusion_log(con, study),
            } | studies.results(con, study)

    def study_beside(self, study: str, runs: list[str]) -> pd.DataFrame:
        """People's condition means after the exclusions beside each run's expected answer on the same items."""
        with self._session() as con:
            return studies.beside_models(con, study, tuple(pasted(r) for r in runs))

    def study_close(self, study: str) -> dict:
        """No one joins or answers any more; from then on every page, export and call reads only the participants
        the exclusions keep."""
        with self._session() as con:
            return study_actions.close(con, study, actor=self.actor)

    def study_pilot(self, study: str, count: int = 1, base_url: str = "http://localhost:8501", days: float = 7):
        """`count` pilot links to the study (take it yourself: stored apart, never analysed, the design stays free):
        DataFrame of participant and URL."""
        with self._session() as con:
            made = study_actions.pilot_links(con, store_path(self.store), study, count, days, actor=self.actor)
        return pd.DataFrame({"participant": [k.person for k in made], "url": [k.url(base_url) for k in made]})

    def study_general_link(self, study: str, cap: int, base_url: str = "http://localhost:8501", days: float = 30):
        """One general link to the study for its design's recruitment platform, starting at most `cap` participants
        (the study's maker or an owner): {"link_id", "url" (with the platform's placeholders), "expires_at"}."""
        with self._session() as con:
            link = study_actions.general_link(con, store_path(self.store), study, cap, days, actor=self.actor)
            return {
                "link_id": link.link_id,
                "url": studies.general_url(con, study, link.url(base_url)),
                "expires_at": link.expires_at,
            }

    def study_release(self, study: str, platform_id: str) -> str:
        """Let a platform id that started in one browser continue in another (on request); the participant's id."""
        with self._session() as con:
            return study_actions.release(con, study, platform_id, actor=self.actor)

    def study_demographics(self, study: str) -> pd.DataFrame:
        """The participants' answers to the design's demographic questions: participant_id, answered_at and one
        column per question (empty when left blank). Personal data, for the study's maker or an owner only
        (audited)."""
        with self._session() as con:
            return study_actions.demographics(con, study, actor=self.actor)

    def study_delete_participant(self, study: str, participant: str, reason: str = "on the participant's request"):
        """Delete one participant's responses, crowd ratings and row on request (logged without answers; a restore
        deletes them again): {"responses", "ratings"} deleted."""
        with self._session() as con:
            return study_actions.delete_participant(con, study, participant, reason, actor=self.actor)

    def study_model(
        self,
        name: str,
        condition: str | None = None,
        formula: str | None = None,
        coding: str = "treatment",
        reference: str | None = None,
        pilot: bool = False,
    ):
        """The mixed-effects model of a study's answers (its analysed participants; with `pilot`, its pilot's) or of
        a graded dataset whose rater ids name one person across items, as `formula` in lme4's syntax over the
        columns of `study_model_frame` (None: the maximal structure the design justifies, `study_model_formula`):
        `metrics.mixed_models.Fit` (formula, coding, fixed effects with Satterthwaite t tests, each term's
        likelihood-ratio test, pairwise comparisons, variance components and correlations, convergence and
        singularity; `.summary()` in words; no estimates when it did not converge). The kept fit of the data as it
        is now, else fitted now (seconds) and kept."""
        with self._session() as con:
            model = mixed_model.chosen(
                con, name, condition, formula=formula, coding=coding, reference=reference, pilot=pilot
            )
        return study_actions.fit_model(self.store, model, actor=self.actor)

    def study_model_frame(self, name: str, condition: str | None = None, pilot: bool = False) -> pd.DataFrame:
        """The rows a model of `name` is fitted on: participant, item, each facet by its name, value."""
        with self._session() as con:
            return mixed_model.frame(con, mixed_model.chosen(con, name, condition, pilot=pilot))

    def study_model_formula(self, name: str, condition: str | None = None) -> str:
        """The default model's formula: the maximal random-effects structure the design justifies."""
        with self._session() as con:
            return mixed_model.formula(con, mixed_model.chosen(con, name, condition))

    def study_power(
        self,
        study: str,
        counts: tuple[int, ...] | None = None,
        sims: int = power_analysis.DEFAULT_SIMS,
        seed: int = 0,
        from_fit: str | None = None,
        pilot: bool = False,
        test: str = "model",
        formula: str = "",
        **typed,
    ) -> pd.DataFrame:
        """Power by simulation of the study's design at each participant count (None: five multiples of its lists
        from 20): participants, contrast, sims, failed, significant, power, low, high (exact binomial 95% CI), test.
        Each simulated study is analysed by `test`: "model", the analysis's mixed model (`formula`, default the
        generating model's structure) and its Satterthwaite t tests, or "f1", the fast by-participant t test.
        Assumes what the kept fit of `from_fit`'s answers (with `pilot`, of its pilot's answers:
        `study_model(from_fit, pilot=True)`) estimates, or typed values: intercept, effects={condition: difference},
        sd_participant, sd_item, sd_slope, sd_residual (and reference)."""
        with self._session() as con:
            request = power_analysis.request(
                con, study, None if counts is None else tuple(counts), sims, seed, test=test, formula=formula,
                from_fit=from_fit, pilot=pilot, **typed,
            )  # fmt: skip
        return study_actions.run_power(self.store, request, actor=self.actor)

    def study_export(self, study: str, out: Path | str, formula: str = "", power: str | None = None) -> list[Path]:
        """The archive's files (responses, design, orders, exclusions, means, the model, methods.md) into the folder
        `out`; methods.md reports the kept fit of `formula` ("": the default model) and the power run `power` (a key
        of `study power`; None: none, and it says how to choose)."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        with self._session() as con:
            files = study_actions.archive(con, study, formula, power, actor=self.actor)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return [folder / name for name in files]


_DESCRIPTION_COLUMNS = ["dataset_id", "task", "labels", "positive", "headline_splits", "facets", "user"]
_EXAMPLE_COLUMNS = [
    "example_id",
    "split",
    "input",
    "context",
    "hypothesis",
    "gold_label",
    "gold_answers",
    "trigger_type",
    "polarity",
    "adversarial",
    "answer_type",
    "question_type",
    "hop",
    "ambiguous",
]


def _slice(dataset: str, facets: dict, run_id: str | None = None) -> Slice:
    """The slice of `dataset` a call's keyword facets name (one value or several), with the run as run A."""
    filters = tuple((name, tuple(v) if isinstance(v, (list, tuple, set)) else (v,)) for name, v in facets.items())
    return Slice(dataset, filters, run_a=run_id)


def _dataset_of(con, run_id: str) -> str:
    dataset_id = store_runs.field(con, run_id, "dataset_id")
    if dataset_id is None:
        raise LookupError(f"no run {run_id!r}")
    return dataset_id
