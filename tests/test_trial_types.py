"""Trial types (issue 63, item 6): a forced choice between an item's members, self-paced reading and the Maze — the
design fields named at their line when wrong, what a participant's answer stores (the order shown, each region's
time), what is refused, the analyses (choice shares, the mixed logistic model against R's glmer, reading times per
region per condition, Maze completion) and the archive and methods.md that describe them. The browser side (key
timings within 50 ms) is tests/test_study_browser.py's."""

from __future__ import annotations

import json
import shutil
import subprocess
from io import BytesIO

import numpy as np
import pandas as pd
import pytest

from backend.actions import studies as study_actions
from backend.analysis import studies, trial_types
from backend.imports import datasets as user_datasets
from backend.metrics import choice_model
from backend.store import studies as store_studies
from backend.store.access import session
from backend.studies import collection
from backend.studies.design import StudyError, parse
from tests.helpers.studies import CHOICE, MAZE, READING, holder, typed_items


@pytest.fixture(scope="module")
def typed_store(tmp_path_factory):
    """A new store holding typed-items."""
    path = tmp_path_factory.mktemp("typed") / "lab.duckdb"
    with session(path, create=True) as con:
        user_datasets.save(con, typed_items())
    return path


@pytest.mark.parametrize(
    "text, field, line",
    [
        (CHOICE.replace("assignment: crossed\n", ""), "assignment", None),
        (READING + "scale: {{kind: slider}}\n", "scale", 8),
        (MAZE.replace(", foils: foil", ""), "trial.foils", 7),
        (MAZE.replace("kind: maze", "kind: mazes"), "trial.kind", 7),
        (READING.replace("options: [yes, no]", "options: [yes]"), "trial.comprehension.options", 7),
        (CHOICE.replace("forced_choice}", "forced_choice, regions: /}"), "trial.regions", 9),
    ],
)
def test_a_bad_trial_type_names_the_field_and_line(text, field, line):
    with pytest.raises(StudyError) as found:
        parse(text.format(name="bad"))
    assert found.value.field == field and (line is None or found.value.line == line)


def created(store, text: str, name: str, people: int = 1):
    """The study made from `text` as `name`, and the holders of links for `people` participants, joined."""
    with session(store) as con:
        study_id = collection.create(con, text.format(name=name))
        held = [holder(con, store, study_id, f"{name}-{n:03d}") for n in range(people)]
        for who in held:
            study_actions.join(con, study_id, actor=who)
    return study_id, held


def test_a_forced_choice_stores_the_order_shown_and_the_chosen_condition_and_is_analysed(typed_store):
    study_id, (who,) = created(typed_store, CHOICE, "fc")
    with session(typed_store) as con:
        first = collection.screen(con, study_id, who.id)
        trials = store_studies.participant(con, study_id, who.id)["trials"]
        assert len(trials) == 6 and all(len(t["shown"]) == 2 for t in trials)  # one trial per item, both members
        shown = [store_studies.example_row(con, study_id, e)["input"] for e in trials[0]["shown"]]
        assert first.shown["options"] == shown and first.text  # the data's own sentences, in the recorded order
        for bad, field in ((2, "answer"), ("a", "answer"), (True, "answer")):
            with pytest.raises(collection.StudyRefused) as refused:
                study_actions.answer(con, study_id, 0, bad, {"rt_ms": 900.0}, actor=who)
            assert refused.value.field == field
        for position, trial in enumerate(trials):  # always the member in condition a, wherever it was shown
            place = [e.endswith("-a") for e in trial["shown"]].index(True)
            study_actions.answer(con, study_id, position, place, {"rt_ms": 900.0}, actor=who)
        given = store_studies.responses(con, study_id)
        assert set(given["label"]) == {"a"} and set(given["value"]) == {0.0}
        orders = [json.loads(d)["shown"] for d in given["detail"]]
        assert orders == [[e.rsplit("-", 1)[1] for e in t["shown"]] for t in trials]  # the order each was shown in
        assert {tuple(o) for o in orders} == {("a", "b"), ("b", "a")}  # drawn per trial (seed 3 gives both)
        shares = trial_types.choice_shares(con, study_id).set_index("condition")
        assert shares.loc["a", ["offered", "chosen", "share"]].tolist() == [6, 6, 1.0]
        assert shares.loc["b", "chosen"] == 0 and 0 < shares.loc["b", "high"] < 0.5  # Wilson: 0 of 6
        fitted = trial_types.choice_fit(con, study_id)
        assert not fitted.converged and "2 or more participants" in fitted.text()  # one person: no model, no number
        files = studies.archive(con, study_id)
    assert "condition_means.csv" not in files and "choice_model.csv" not in files
    assert pd.read_csv(BytesIO(files["choice_shares.csv"]))["chosen"].tolist() == [6, 0]
    methods = files["methods.md"].decode()
    assert "saw 6 items, one trial each" in methods and "a 6 of 6 (1.000" in methods
    assert "did not converge" in methods and "Mean answer" not in methods


def test_a_reading_trial_stores_every_region_s_time_and_the_comprehension_answer(typed_store):
    study_id, (who,) = created(typed_store, READING, "spr")
    with session(typed_store) as con:
        screen = collection.screen(con, study_id, who.id)
        assert screen.shown["regions"] == screen.text.split() and len(screen.shown["regions"]) == 4
        assert screen.shown["question"] == "Was it asleep?" and screen.shown["answers"] == ["yes", "no"]
        for measured, field in (
            ({"regions": [300.0, 310.0, 320.0]}, "regions"),  # one time short
            ({"regions": [300.0, -1.0, 320.0, 330.0]}, "regions"),
            ({"regions": [300.0, 310.0, 320.0, float("inf")]}, "regions"),
            ({"regions": [300.0, 310.0, 320.0, 330.0], "extra": 1}, "timing"),
        ):
            with pytest.raises(collection.StudyRefused) as refused:
                study_actions.answer(con, study_id, 0, "yes", measured, actor=who)
            assert refused.value.field == field
        with pytest.raises(collection.StudyRefused) as refused:
            study_actions.answer(con, study_id, 0, "maybe", {"regions": [300.0, 310.0, 320.0, 330.0]}, actor=who)
        assert refused.value.field == "answer" and store_studies.responses(con, study_id).empty
        trials = store_studies.participant(con, study_id, who.id)["trials"]
        for position, trial in enumerate(trials):
            slow = trial["id"].endswith("-b") * 200.0  # condition b: its third region read 200 ms slower
            regions = [300.0, 310.0, 320.0 + slow, 330.0]
            study_actions.answer(con, study_id, position, "yes", {"regions": regions, "rt_ms": 1500.0}, actor=who)
        given = store_studies.responses(con, study_id)
        first = json.loads(given["detail"].iloc[0])["regions"]
        assert [r["text"] for r in first] == screen.text.split() and first[0] == {"region": 1, "text": "The"} | {
            "rt_ms": 300.0
        }
        answers = {t["id"]: ("yes" if int(t["id"][1]) % 2 else "no") for t in trials}
        assert given["value"].tolist() == [float(answers[t] == "yes") for t in given["trial"]]  # comprehension right
        times = trial_types.region_times(con, study_id).set_index(["condition", "region"])
        assert times.loc[("a", 3), "mean_ms"] == 320.0 and times.loc[("b", 3), "mean_ms"] == 520.0
        assert times.loc[("a", 1), ["n", "participants", "items"]].tolist() == [3, 1, 3]
        files = studies.archive(con, study_id)
    assert "region_times.csv" in files and "condition_means.csv" not in files
    methods = files["methods.md"].decode()
    assert "moving window" in methods and "a 315 ms; b 320 ms" in methods and "Was it {hypothesis}?" in methods


def test_a_maze_trial_ends_at_a_wrong_choice_and_times_only_right_ones(typed_store):
    study_id, (who,) = created(typed_store, MAZE, "maze")
    with session(typed_store) as con:
        screen = collection.screen(con, study_id, who.id)
        assert screen.shown["foils"] == ["x-x-x", "ran", "blue", "into"] and len(screen.shown["regions"]) == 4
        bad = (
            {"regions": [400.0, 410.0], "choices": [True, True], "sides": ["left", "right"]},  # ended with no error
            {"regions": [400.0, 410.0], "choices": [False, True], "sides": ["left", "right"]},  # went on after one
            {"regions": [400.0], "choices": [False], "sides": ["up"]},
            {"regions": [400.0, 410.0], "choices": [True, False], "sides": ["left"]},
        )
        for measured in bad:
            with pytest.raises(collection.StudyRefused):
                study_actions.answer(con, study_id, 0, None, measured, actor=who)
        assert store_studies.responses(con, study_id).empty
        trials = store_studies.participant(con, study_id, who.id)["trials"]
        for position, trial in enumerate(trials):
            if trial["id"].endswith("-b"):  # wrong at the third region
                sent = {"regions": [400.0, 420.0, 900.0], "choices": [True, True, False]}
                sent["sides"] = ["left", "right", "left"]
            else:
                sent = {"regions": [400.0, 420.0, 440.0, 460.0], "choices": [True] * 4, "sides": ["left"] * 4}
            study_actions.answer(con, study_id, position, None, sent, actor=who)
        completed = trial_types.maze_completed(con, study_id).set_index("condition")
        assert completed[["sentences", "completed"]].to_dict("index") == {
            "a": {"sentences": 3, "completed": 3},
            "b": {"sentences": 3, "completed": 0},
        }
        times = trial_types.region_times(con, study_id).set_index(["condition", "region"])
        assert ("b", 3) not in times.index and times.loc[("b", 2), "mean_ms"] == 420.0  # the wrong one is not timed
        detail = json.loads(store_studies.responses(con, study_id)["detail"].iloc[0])["regions"][1]
        assert set(detail) == {"region", "text", "foil", "side", "correct", "rt_ms"} and detail["foil"] == "ran"
        methods = studies.archive(con, study_id)["methods.md"].decode()
        titles = list(studies.results(con, study_id))  # what `study status` and Lab.study_status give
    assert titles == [trial_types.TITLES["region_times.csv"], trial_types.TITLES["maze_completed.csv"]]
    assert "Maze task" in methods and "b 0 of 3" in methods and "Only regions chosen right" in methods


def test_the_choice_model_equals_r_s_glmer(tmp_path):
    """The mixed logistic model on a simulated two-way choice against lme4's glmer (Laplace), its standard error
    lme4's default (the Hessian over the variances and the fixed effect)."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed: the oracle needs R with lme4 (r-cran-lme4)")
    rng = np.random.default_rng(7)
    people, items = rng.normal(0, 0.8, 30), rng.normal(0, 0.5, 16)
    rows = [
        {"participant": f"p{p}", "item": f"i{i}", "chose_first": int(rng.random() < 1 / (1 + np.exp(-(0.4 + u + v))))}
        for p, u in enumerate(people)
        for i, v in enumerate(items)
    ]
    frame = pd.DataFrame(rows)
    frame.to_csv(tmp_path / "choices.csv", index=False)
    script = (
        "suppressMessages(library(lme4)); d <- read.csv(commandArgs(TRUE)[1]); m <- glmer(chose_first ~ 1 + "
        "(1|participant) + (1|item), d, family = binomial); s <- coef(summary(m)); v <- as.data.frame(VarCorr(m)); "
        'cat(s[1, 1], s[1, 2], s[1, 4], v$vcov[v$grp == "participant"], v$vcov[v$grp == "item"])'
    )
    done = subprocess.run(["Rscript", "-e", script, str(tmp_path / "choices.csv")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    estimate, se, p, participant, item = map(float, done.stdout.split())
    fitted = choice_model.fit(frame, "a", "b")
    assert fitted.converged
    assert fitted.estimate == pytest.approx(estimate, abs=1e-3) and fitted.se == pytest.approx(se, rel=1e-3)
    assert fitted.p == pytest.approx(p, abs=1e-3)
    assert dict(fitted.variance) == pytest.approx({"participant": participant, "item": item}, rel=1e-2, abs=1e-4)


def test_a_reading_practice_item_is_read_without_a_question_and_stored_apart_from_the_items(typed_store):
    text = READING + 'practice: [{{text: "A cat / sat here."}}]\n'
    study_id, (who,) = created(typed_store, text.replace("{{kind: reading,", "{{kind: reading, regions: /,"), "sprp")
    with session(typed_store) as con:
        screen = collection.screen(con, study_id, who.id)
        assert screen.trial_kind == "practice" and screen.shown == {"regions": ["A cat", "sat here."]} | {
            "question": "",
            "answers": [],
        }
        study_actions.answer(con, study_id, 0, None, {"regions": [350.0, 420.0]}, actor=who)
        assert collection.screen(con, study_id, who.id).shown["question"] == "Was it asleep?"
        times = trial_types.region_times(con, study_id)
    assert times.empty  # a practice item is not a result


def test_the_study_page_shows_a_typed_study_s_own_results_and_no_mean_answer(typed_store, open_page):
    study_id, (who,) = created(typed_store, MAZE, "mazepage")
    with session(typed_store) as con:
        for position in range(6):
            sent = {"regions": [400.0, 420.0, 440.0, 460.0], "choices": [True] * 4, "sides": ["right"] * 4}
            study_actions.answer(con, study_id, position, None, sent, actor=who)
    at = open_page(typed_store, "pages/study.py", {"study": study_id})
    assert not at.exception
    headers = [h.value for h in at.subheader]
    assert "Reading times per region" in headers and "Sentences completed" in headers
    assert "Mean answer per condition" not in headers and "Mixed-effects model" not in headers
    assert any("are for rating studies" in c.value for c in at.caption)
    assert {tuple(df.value.columns)[:3] for df in at.dataframe} >= {("condition", "region", "n")}
