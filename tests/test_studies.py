"""Judgement studies (issue 47): balanced lists and reproducible orders, the projective-probability design rebuilt
from the shared data's items, and a simulated study of 40 participants answering through the participant path whose
analysis recovers the generating condition means and excludes exactly the participants the declared rule names."""

from __future__ import annotations

import shutil
import threading
import time
import zipfile
from io import BytesIO
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from backend.actions import studies as study_actions
from backend.analysis import gradient, mixed_model, power_analysis, projection, studies
from backend.api import Lab
from backend.cli.main import main
from backend.execution import jobs
from backend.identity import links
from backend.identity.actor import Actor
from backend.identity.permissions import Forbidden
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.metrics import mixed_models
from backend.store import backup
from backend.store import links as store_links
from backend.store import studies as store_studies
from backend.store.access import session
from backend.studies import collection
from backend.studies.design import StudyError, items, list_count, order, parse, participant_seed
from backend.studio import templates
from backend.views import example as example_view
from tests.helpers.people import LOCAL, give_roles

DESIGN = """
name: sim-study
dataset: sim-items
item: item
condition: variant
assignment: latin
controls: {where: {variant: [control]}, expected: 0, placement: mixed}
attention:
  - {text: "Move the slider to the right end.", expected: 1, tolerance: 0.1}
order: {seed: 5, separate: item}
text: "{input}"
question: "How certain is the speaker that {hypothesis}?"
criterion: certainty
scale: {kind: slider, min: 0, max: 1, left: "not at all", right: "completely"}
instructions: "Move the slider."
consent: "You agree."
practice: [{text: "A practice sentence.", question: "A practice question?"}]
native_language: English
exclusions:
  - {rule: controls_sd, k: 2, direction: above}
"""
ROOT = Path(__file__).resolve().parents[1]


def unexcluded(name: str, instead: str = "") -> str:
    """DESIGN as the study `name`, its exclusion rules replaced by `instead` (e.g. a platform's lines)."""
    return DESIGN.replace("sim-study", name).replace(
        "exclusions:\n  - {rule: controls_sd, k: 2, direction: above}\n", instead
    )


TRUE_MEANS = {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.8}


def grid_examples(n_items: int, conditions: list[str], controls: int = 0) -> pd.DataFrame:
    """Examples as the store gives them: an item × condition grid, and control rows."""
    rows = [
        {"example_id": f"i{i}-{c}", "split": "all", "extra": {"item": f"i{i}", "condition": c}}
        for i in range(n_items)
        for c in conditions
    ]
    rows += [
        {"example_id": f"ctl{k}", "split": "all", "extra": {"item": f"ctl{k}", "condition": "control"}}
        for k in range(controls)
    ]
    return pd.DataFrame(rows)


def synthetic(conditions: int, n_items: int, assignment: str = "latin", separate: str = "item") -> str:
    return (
        f"name: syn\ndataset: syn\nitem: item\ncondition: condition\nassignment: {assignment}\n"
        f"order: {{seed: 11, separate: {separate}}}\nquestion: q\nscale: {{kind: likert}}\n"
    )


@pytest.mark.parametrize("conditions", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("n_items", [12, 13])
def test_latin_square_lists_are_balanced(conditions, n_items):
    names = [f"c{k}" for k in range(conditions)]
    design = parse(synthetic(conditions, n_items))
    found = items(design, grid_examples(n_items, names))
    lists = list_count(design, found)
    assert lists == conditions
    seen = []
    for list_no in range(lists):
        trials = order(design, found, list_no, participant_seed(design, list_no))
        ids = [t["id"] for t in trials if t["kind"] == "target"]
        cells = [tuple(e.split("-")) for e in ids]
        assert sorted(i for i, _ in cells) == sorted(f"i{i}" for i in range(n_items))  # every item once
        per_condition = pd.Series([c for _, c in cells]).value_counts().reindex(names, fill_value=0)
        assert per_condition.max() - per_condition.min() <= (0 if n_items % conditions == 0 else 1)
        assert per_condition.sum() == n_items
        seen += cells
    assert pd.Series(seen).value_counts().eq(1).all() and len(seen) == n_items * conditions  # each cell once


def test_seeds_reproduce_orders_and_differ_between_participants():
    design = parse(synthetic(4, 12))
    found = items(design, grid_examples(12, ["a", "b", "c", "d"]))
    first = order(design, found, 1, participant_seed(design, 3))
    assert first == order(design, found, 1, participant_seed(design, 3))
    assert first != order(design, found, 1, participant_seed(design, 4))
    assert participant_seed(design, 3) == participant_seed(parse(synthetic(4, 12)), 3)


def test_crossed_and_random_assignments_and_the_separate_constraint():
    found_examples = grid_examples(6, ["a", "b", "c"])
    crossed = parse(synthetic(3, 6, "crossed"))
    trials = order(crossed, items(crossed, found_examples), 0, 7)
    ids = [t["id"] for t in trials]
    assert len(ids) == 18 and len(set(ids)) == 18
    assert all(a.split("-")[0] != b.split("-")[0] for a, b in zip(ids, ids[1:]))  # no item twice in a row
    random_design = parse(synthetic(3, 6, "random").replace("assignment: random", "assignment: random\nk: 4"))
    found = items(random_design, found_examples)
    assert list_count(random_design, found) is None
    picked = [t["id"] for t in order(random_design, found, 0, 9)]
    assert len(picked) == 4 and len({e.split("-")[0] for e in picked}) == 4
    assert pd.Series([e.split("-")[1] for e in picked]).value_counts().max() == 2  # 4 over 3 conditions: 2, 1, 1


@pytest.mark.parametrize(
    ("change", "field", "line"),
    [
        (("scale: {kind: slider", "scale: {kind: dial"), "scale.kind", 14),
        (("assignment: latin", "assignment: latin\ncolour: red"), "colour", 7),
        (("  - {rule: controls_sd, k: 2, direction: above}", "  - {rule: controls_sd, k: -1}"), "exclusions.0.k", 20),
        (("expected: 0, placement", "expected: 7, placement"), "controls.expected", 7),
        (("name: sim-study", "name: Sim Study"), "name", 2),
    ],
)
def test_a_bad_design_names_the_field_and_line(change, field, line):
    with pytest.raises(StudyError) as caught:
        parse(DESIGN.replace(*change), "mine.yaml")
    assert caught.value.field == field and caught.value.line == line and "mine.yaml" in str(caught.value)


def test_the_projective_probability_design_rebuilt_from_the_shared_items(real_con):
    text = Path("data/studies/projective-probability.yaml").read_text()
    design = parse(text)
    found = items(design, store_studies.example_rows(real_con, "projective_probability"))
    assert found.grid.shape == (20, 20) and len(found.controls) == 6  # 20 contents × 20 predicates; 6 controls
    pairs = []
    for list_no in range(list_count(design, found)):
        trials = order(design, found, list_no, participant_seed(design, list_no))
        targets = [t["id"] for t in trials if t["kind"] == "target"]
        controls = [t["id"] for t in trials if t["kind"] == "control"]
        assert len(targets) == 20 and sorted(controls) == sorted(found.controls)
        predicates = [e.split("/")[1] for e in targets]
        contents = [e.split("/")[2] for e in targets]
        assert len(set(predicates)) == 20 and len(set(contents)) == 20  # one complement per predicate, none twice
        pairs += targets
    assert len(pairs) == 400 and len(set(pairs)) == 400  # every predicate × complement once over the 20 lists


def test_the_example_design_names_a_stored_dataset_or_says_how_to_make_it_in_studio(real_store, tmp_path, open_page):
    """Issue 54, item 7: the example design named stop-under-operators, not in the store, and its hint was a
    command; it is now a design over a dataset the store has, or the Studio's *Save as a dataset* when none is."""
    at = open_page(real_store, "pages/study.py")
    assert parse(at.text_area[0].value).dataset == "projective_probability"  # ingested from ../shared
    assert any("**projective\\_probability**, a dataset in the store" in c.value for c in at.caption)
    with session(tmp_path / "empty.duckdb", create=True):
        pass
    at = open_page(tmp_path / "empty.duckdb", "pages/study.py")
    hint = next(c.value for c in at.caption if "example family set" in c.value)
    assert parse(at.text_area[0].value).dataset == "stop-under-operators" and "not in the store yet" in hint
    assert "press *Save as a dataset*" in hint and "python -m backend" not in hint
    assert [link.proto.page for link in at.get("page_link")] == ["studio"]  # a link to the Studio page


def test_links_made_on_the_page_are_listed_at_once(store_copy, open_page):
    """Issue 54, item 7: the *Links* list read a cache of the data, not of the links: empty until a reload."""
    with session(store_copy) as con:
        collection.create(con, Path("data/studies/projective-probability.yaml").read_text())
    at = open_page(store_copy, "pages/study.py")
    listed = next(t.value for t in at.dataframe if "person" in t.value)
    assert listed.empty
    at = next(b for b in at.button if b.label == "Make links").click().run()
    assert not at.exception and any("10 link(s) made" in s.value for s in at.success)
    listed = next(t.value for t in at.dataframe if "person" in t.value)
    assert sorted(listed["person"]) == [f"pp-replication-{n:03}" for n in range(1, 11)]


@pytest.fixture(scope="module")
def study_store(real_store, tmp_path_factory):
    """A copy of the real store with a small item set: 12 items × 4 conditions and 4 controls."""
    path = tmp_path_factory.mktemp("study") / "lab.duckdb"
    shutil.copy(real_store, path)
    rows = [
        {
            "id": f"i{i}-{c}",
            "premise": f"Speaker {i} says something ({c}).",
            "hypothesis": f"fact {i} holds",
            "label": "E",
            "item": f"i{i}",
            "variant": c,
        }
        for i in range(12)
        for c in TRUE_MEANS
    ]
    rows += [
        {
            "id": f"ctl{k}",
            "premise": f"Is it true that fact {k} holds?",
            "hypothesis": f"fact {k} holds",
            "label": "N",
            "item": f"ctl{k}",
            "variant": "control",
        }
        for k in range(4)
    ]
    options = user_datasets.DatasetOptions(name="sim-items", task="nli", columns={"example_id": "id"})
    bundle, _ = user_datasets.check(read(pd.DataFrame(rows), name="sim.csv"), options)
    with session(path) as con:
        user_datasets.save(con, bundle)
    return path


def participant(con, store, study_id: str, person: str) -> Actor:
    """Who opens the person's link to the study (made now, as the owner's `links.create` would, when they have
    none): every answer reads the link's row again, so a participant is a real link's holder."""
    obj = f"study:{study_id}"
    found = store_links.listing(con, obj)
    rows = found[found["person"] == person].to_dict("records")
    token = links.token(store, rows[0]) if rows else links.create(con, store, person, obj, 7, by="tests").token
    return links.opened(con, store, token)


def answer_all(con, study_id: str, who: Actor, value_of) -> collection.Screen:
    screen = study_actions.screen(con, study_id, actor=who)
    assert screen.kind == "welcome"
    study_actions.join(con, study_id, actor=who)
    screen = study_actions.screen(con, study_id, actor=who)
    while screen.kind == "trial":
        screen = study_actions.answer(con, study_id, screen.position, value_of(screen), actor=who)
    return screen


def noisy_answers(
    con, study_id: str, person: str, examples: pd.DataFrame, rng, spread: float = 0.05, careless: bool = False
):
    """A participant's answers: each target near its condition's TRUE_MEANS (controls near 0.05), shifted by the
    participant's own offset (SD `spread`), with noise — or, `careless`, at random and high on the controls; yes to
    the native-language question, 1 to practice and attention."""
    offset = rng.normal(0, spread)

    def value_of(screen):
        trial = store_studies.participant(con, study_id, person)["trials"][screen.position]
        if trial["kind"] == "native":
            return "yes"
        if trial["kind"] in ("practice", "attention"):
            return 1.0
        condition = examples.loc[trial["id"], "extra"]["variant"]
        if careless:
            return float(rng.uniform(0.8, 1.0)) if condition == "control" else float(rng.uniform())
        mean = 0.05 if condition == "control" else TRUE_MEANS[condition]
        return float(np.clip(mean + offset + rng.normal(0, 0.1), 0, 1))

    return value_of


def test_a_simulated_study_recovers_the_condition_means_and_excludes_the_noise_participants(
    study_store, tmp_path, open_page
):
    rng = np.random.default_rng(47)
    with session(study_store) as con:
        study_id = collection.create(con, DESIGN)
        made = study_actions.make_links(con, study_store, study_id, 40, actor=LOCAL)
        examples = store_studies.example_rows(con, study_id).set_index("example_id")
        noisy = {link.person for link in made[::10]}  # 4 of 40: answer at random, and high on the controls
        for link in made:
            who = participant(con, study_store, study_id, link.person)
            value_of = noisy_answers(con, study_id, who.id, examples, rng, spread=0.03, careless=who.id in noisy)
            done = answer_all(con, study_id, who, value_of)
            assert done.kind == "done" and len(done.code) == 8
        lists = studies.progress(con, study_id)
        assert list(lists["started"]) == [10, 10, 10, 10] and lists["finished"].sum() == 40  # balanced lists
        people = studies.participants(con, study_id)
        assert set(people.loc[people["excluded_by"] == "controls_sd", "participant_id"]) == noisy
        log = studies.exclusion_log(con, study_id).set_index("rule")
        assert log.loc["controls_sd", "newly_excluded"] == 4 and log.loc["controls_sd", "remaining"] == 36
        means = studies.condition_means(con, study_id)
        after = means[means["stage"] == studies.AFTER].set_index("condition")
        for condition, true in TRUE_MEANS.items():
            assert after.loc[condition, "low"] <= true <= after.loc[condition, "high"], (condition, after)
            assert after.loc[condition, "participants"] == 36
        before = means[means["stage"] == studies.BEFORE].set_index("condition")
        assert before.loc["a", "mean"] > after.loc["a", "mean"]  # the noise pulls the lowest condition up
        # the study's dataset shows the answers like a built-in study's, and closing writes the exclusions there
        assert len(gradient.ratings(con, study_id)) == 40 * 12
        closed = collection.close(con, study_id)
        assert set(closed["excluded"]) == noisy
        assert len(gradient.ratings(con, study_id)) == 36 * 12
        table = gradient.certainty(con, study_id, "variant")
        assert table.set_index("group").loc["d", "mean"] == pytest.approx(after.loc["d", "mean"])
        files = studies.archive(con, study_id)
        run = "sim-items/baseline/always-E"
        beside = studies.beside_models(con, study_id, (run,)).set_index(["who", "condition"])
        assert beside.loc[(run, "a"), "mean"] == 1.0  # always E: P(E) = 1 on every item, the slider's top
    page = open_page(study_store, "pages/gradient.py", {"dataset": study_id, "by": "variant", "run": run})
    assert not page.exception and page.selectbox(key="run").value == run  # the source's runs, beside people
    assert "Spearman ρ, run vs people, over 4 variant means" in [m.label for m in page.metric]
    said = [c.value.replace("\\", "") for c in page.caption]  # issue 55: how many are analysed, and who is not
    assert "36 participants analysed (the study is closed); left out: 4 by controls_sd." in said, said
    page = open_page(study_store, "pages/study.py", {"study": study_id, "run": run})
    assert not page.exception and any("leaving 36 participants" in m.value for m in page.markdown)
    responses = pd.read_csv(BytesIO(files["responses.csv"]))
    assert len(responses) == 40 * (1 + 12 + 4 + 1 + 1)  # practice, targets, controls, attention, native
    assert set(responses.loc[responses["excluded_by"] == "controls_sd", "participant_id"]) == noisy
    methods = files["methods.md"].decode()
    assert "40 participants started and 40 finished" in methods and "leaving 36 participants" in methods
    assert "we excluded 4 participants who had a mean answer on the controls" in methods
    assert f"a: {after.loc['a', 'mean']:.2f}" in methods
    orders = pd.read_csv(BytesIO(files["orders.csv"]))
    assert len(orders) == 40 and orders["seed"].nunique() == 40
    assert main(["--store", str(study_store), "study", "export", study_id, "--out", str(tmp_path / "a.zip")]) == 0
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        assert f"{study_id}/design.yaml" in archive.namelist()


def test_answers_out_of_turn_out_of_range_or_after_closing_are_refused_and_change_nothing(study_store):
    design = unexcluded("turns")
    with session(study_store) as con:
        study_id = collection.create(con, design)
        study_actions.make_links(con, study_store, study_id, 1, people=["turns-001"], actor=LOCAL)
        who = participant(con, study_store, study_id, "turns-001")
        study_actions.join(con, study_id, actor=who)
        before = store_studies.responses(con, study_id)
        with pytest.raises(collection.StudyRefused, match="position: trial 2 is not shown yet"):
            study_actions.answer(con, study_id, 1, 0.5, actor=who)
        with pytest.raises(collection.StudyRefused, match="answer: 1.5; expected a number from 0 to 1"):
            study_actions.answer(con, study_id, 0, 1.5, actor=who)
        study_actions.answer(con, study_id, 0, 0.5, actor=who)
        with pytest.raises(collection.StudyRefused, match="trial 1 was already answered"):
            study_actions.answer(con, study_id, 0, 0.5, actor=who)
        with pytest.raises(Forbidden):  # a link to one study answers no other
            study_actions.answer(con, "sim-study", 0, 0.5, actor=who)
        with pytest.raises(collection.StudyRefused, match="frozen"):
            collection.create(con, design, replace=True)
        collection.close(con, study_id)
        with pytest.raises(collection.StudyRefused, match="closed"):
            study_actions.answer(con, study_id, 1, 0.5, actor=who)
        with pytest.raises(collection.StudyRefused, match="closed"):
            study_actions.join(con, study_id, actor=participant(con, study_store, study_id, "turns-002"))
        assert len(store_studies.responses(con, study_id)) == len(before) + 1


def test_a_study_needs_a_complete_grid_and_known_fields(study_store):
    with session(study_store) as con:
        with pytest.raises(StudyError, match="field 'question'.*no_such_field"):
            collection.create(con, DESIGN.replace("{hypothesis}", "{no_such_field}").replace("sim-study", "bad1"))
        with pytest.raises(StudyError, match="field 'colour': no item of sim-items has a facet 'colour'"):
            collection.create(
                con, DESIGN.replace("condition: variant", "condition: colour").replace("sim-study", "bad2")
            )
        with pytest.raises(StudyError, match="field 'dataset': dataset 'no-such-set' is not in the store"):
            collection.create(
                con, DESIGN.replace("dataset: sim-items", "dataset: no-such-set").replace("sim-study", "bad3")
            )
        with pytest.raises(StudyError, match="a dataset 'sim-items' exists"):
            collection.create(con, DESIGN.replace("name: sim-study", "name: sim-items"))
        assert "bad1" not in set(store_studies.listing(con)["study_id"])
        assert con.execute("SELECT count(*) FROM datasets WHERE dataset_id LIKE 'bad%'").fetchall()[0][0] == 0


def test_only_an_analyst_creates_a_study(study_store):
    viewer = Actor("v@lab.example", "viewer", "sign-in")
    give_roles(study_store, viewer)
    with session(study_store) as con, pytest.raises(Forbidden, match="that needs the analyst role"):
        study_actions.create(con, DESIGN.replace("sim-study", "viewers"), actor=viewer)
    with duckdb.connect(str(study_store)) as con:
        assert not con.execute("SELECT * FROM studies WHERE study_id = 'viewers'").fetchall()


def test_the_notebook_api_and_the_commands_run_a_study(study_store, tmp_path, capsys):
    lab = Lab(study_store)
    study_id = lab.study_create(DESIGN.replace("sim-study", "api-study"))
    made = lab.study_links(study_id, 2, base_url="https://lab.example")
    assert list(made["participant"]) == ["api-study-001", "api-study-002"]
    assert made["url"].str.startswith("https://lab.example/?link=").all()
    assert lab.study_status(study_id)["lists"].empty
    design = tmp_path / "cli.yaml"
    design.write_text(DESIGN.replace("sim-study", "cli-study"))
    assert main(["--store", str(study_store), "study", "create", str(design)]) == 0
    assert main(["--store", str(study_store), "study", "create", str(design)]) == 1  # exists: --replace
    assert "a study 'cli-study' exists" in capsys.readouterr().err
    assert main(["--store", str(study_store), "study", "create", str(design), "--replace"]) == 0
    assert main(["--store", str(study_store), "study", "links", "cli-study", "--count", "3"]) == 0
    assert capsys.readouterr().out.count("/?link=") == 3
    with session(study_store) as con:  # opened, not answered: a new version of the design starts them afresh
        study_actions.join(con, "cli-study", actor=participant(con, study_store, "cli-study", "cli-study-001"))
    assert main(["--store", str(study_store), "study", "create", str(design), "--replace"]) == 0
    with session(study_store) as con:
        assert store_studies.participant(con, "cli-study", "cli-study-001") is None
    assert main(["--store", str(study_store), "study", "status", "cli-study"]) == 0
    assert "exclusions, in the declared order" in capsys.readouterr().out
    assert main(["--store", str(study_store), "study", "close", "cli-study"]) == 0
    assert main(["--store", str(study_store), "study", "links", "cli-study"]) == 1  # closed: no more links
    written = lab.study_export(study_id, tmp_path / "out")
    assert {p.name for p in written} >= {"responses.csv", "design.yaml", "orders.csv", "exclusions.csv", "methods.md"}
    with session(study_store) as con:
        assert store_studies.study(con, "cli-study")["version"] == 3


def test_a_backup_keeps_a_study_its_participants_and_their_answers(study_store, tmp_path):
    with session(study_store) as con:
        study_id = collection.create(con, DESIGN.replace("sim-study", "kept"))
        study_actions.make_links(con, study_store, study_id, 1, people=["kept-001"], actor=LOCAL)
        who = participant(con, study_store, study_id, "kept-001")
        study_actions.join(con, study_id, actor=who)
        for position in range(3):
            study_actions.answer(con, study_id, position, 0.25, actor=who)
        saved = {t: store_studies.responses(con, study_id) for t in ("responses",)}
        count = "SELECT count(*) FROM ratings WHERE dataset_id = 'kept'"  # (an unfinished participant's: not analysed)
        ratings = con.execute(count).fetchone()[0]
        folder = backup.write(con, "test", target=tmp_path / "b")
        for table in ("study_responses", "study_participants", "studies"):
            con.execute(f"DELETE FROM {table} WHERE study_id = 'kept'")
        con.execute("DELETE FROM ratings WHERE dataset_id = 'kept'")
        backup.restore(con, folder)
        assert store_studies.responses(con, study_id).equals(saved["responses"])
        assert store_studies.participant(con, study_id, "kept-001")["trials"]
        assert con.execute(count).fetchone()[0] == ratings >= 1


def test_pages_read_one_analysed_set_finished_so_far_while_open(study_store):
    """Issue 55, item 1 (in part): while a study is open the Gradient and Projection analyses read only the
    participants who finished (one who stopped half-way is left out, and counted); `collection.analysed` is the one
    definition they share."""
    with session(study_store) as con:
        study_id = collection.create(con, DESIGN.replace("name: sim-study", "name: sim-study-open"))
        made = study_actions.make_links(con, study_store, study_id, 4, actor=LOCAL)

        def value_of(screen):
            return "yes" if screen.trial_kind == "native" else 0.5

        for link in made[:3]:
            answer_all(con, study_id, participant(con, study_store, study_id, link.person), value_of)
        late = participant(con, study_store, study_id, made[3].person)
        study_actions.join(con, study_id, actor=late)
        screen = study_actions.screen(con, study_id, actor=late)
        for _ in range(8):  # half-way: some of their target answers are stored (the native question comes last)
            screen = study_actions.answer(con, study_id, screen.position, 0.9, actor=late)
        stored = store_studies.responses(con, study_id)
        assert (stored["participant_id"] == made[3].person).any()
        found = collection.analysed(con, study_id)
        assert found.participants == {link.person for link in made[:3]} and found.left_out == {"not finished": 1}
        shown = gradient.ratings(con, study_id)
        finished = stored[(stored["kind"] == "target") & stored["participant_id"].isin(found.participants)]
        assert len(shown) == len(finished) == 3 * 12 and set(shown["rater"]) == found.participants
        assert shown["value"].mean() == pytest.approx(finished["value"].mean())
        assert collection.analysed(con, "sim-items") is None  # not a study: every rater counts
        # the Example page marks each rating: counted, or why its participant is left out
        theirs = stored[(stored["participant_id"] == made[3].person) & (stored["kind"] == "target")]
        rows = example_view.example_detail(con, study_id, theirs["trial"].iloc[0])["ratings"].set_index("rater_id")
        assert rows.loc[made[3].person, "analysed"] == "not finished"
        assert (rows.drop(index=made[3].person)["analysed"] == "yes").all()


def test_a_closed_study_over_a_projection_set_shows_only_its_kept_participants_on_every_page(
    study_store, open_page, capsys
):
    """Issue 55, item 1: the shipped stop-study (over the Studio's family set, which has a projection spec) with one
    participant failing the attention check and one stopping half-way. Projection, Gradient, Example, the exports,
    the API and `study status` read the same participants — while open the 5 who finished, once closed the 4 the
    exclusions keep — each equal to a pandas computation over the stored answers, and the pages say how many."""
    design = (ROOT / "data" / "studies" / "stop-study.yaml").read_text()
    design = design.replace("  - {rule: min_seconds, seconds: 20}\n", "")  # answered here in milliseconds
    rng = np.random.default_rng(55)
    with session(study_store) as con:
        expansion = templates.expand(templates.example_text())
        user_datasets.save(con, templates.bundle(expansion, "stop-under-operators.yaml"))
        study_id = collection.create(con, design)
        made = study_actions.make_links(con, study_store, study_id, 6, actor=LOCAL)
        careless = made[4].person
        for link in made[:5]:

            def value_of(screen, person=link.person):
                if screen.trial_kind == "native":
                    return "yes"
                if screen.trial_kind == "attention":
                    return 0.0 if person == careless else 1.0
                return float(rng.uniform())

            answer_all(con, study_id, participant(con, study_store, study_id, link.person), value_of)
        late = participant(con, study_store, study_id, made[5].person)
        study_actions.join(con, study_id, actor=late)
        screen = study_actions.screen(con, study_id, actor=late)
        for _ in range(4):
            screen = study_actions.answer(con, study_id, screen.position, 0.9, actor=late)
        stored = store_studies.responses(con, study_id)
        targets = stored[stored["kind"] == "target"]
        assert set(targets["participant_id"]) == {link.person for link in made}

        def expected(people):  # per item, the share of the people's answers at or above the design's 0.5
            mine = targets[targets["participant_id"].isin(people)]
            return (mine["value"] >= 0.5).groupby(mine["trial"]).mean()

        def shown():
            found = projection.items(con, study_id).set_index("example_id")["survives"].dropna()
            return found.sort_index()

        finished = {link.person for link in made[:5]}
        pd.testing.assert_series_equal(shown(), expected(finished).sort_index(), check_names=False)
        assert set(gradient.ratings(con, study_id)["rater"]) == finished
        collection.close(con, study_id)
        kept = finished - {careless}
        assert collection.analysed(con, study_id).participants == kept
        pd.testing.assert_series_equal(shown(), expected(kept).sort_index(), check_names=False)
        ratings = gradient.ratings(con, study_id)
        assert set(ratings["rater"]) == kept and len(ratings) == len(targets[targets["participant_id"].isin(kept)])
        table = gradient.certainty(con, study_id, "variant").set_index("group")
        examples = store_studies.example_rows(con, study_id).set_index("example_id")
        mine = targets[targets["participant_id"].isin(kept)]
        by_variant = mine["value"].groupby(mine["trial"].map(lambda e: examples.loc[e, "extra"]["variant"])).mean()
        assert table["mean"].to_dict() == pytest.approx(by_variant.to_dict())
        theirs = targets[targets["participant_id"] == careless]["trial"].iloc[0]
        marks = example_view.example_detail(con, study_id, theirs)["ratings"].set_index("rater_id")["analysed"]
        assert marks[careless] == "attention" and (marks.drop(index=careless) == "yes").all()
    said = "4 participants analysed (the study is closed); left out: 1 by attention, 1 not finished"
    assert Lab(study_store).study_status(study_id)["analysed"] == said
    assert main(["--store", str(study_store), "study", "status", study_id]) == 0
    assert said in capsys.readouterr().out
    page = open_page(study_store, "pages/projection.py", {})
    assert not page.exception
    assert f"{study_id} is a study's answers: {said}." in [c.value.replace("\\", "") for c in page.caption]
    page = open_page(study_store, "pages/gradient.py", {"dataset": study_id, "by": "variant"})
    assert not page.exception and f"{said}." in [c.value.replace("\\", "") for c in page.caption]


def test_a_study_s_mixed_model_and_power_from_the_commands_the_pages_and_the_api(
    study_store, tmp_path, monkeypatch, open_page, capsys
):
    """Issue 55, items 2 and 3: the Study page offers a fit before there is one and fits it as a job (its button);
    `study model` and `Lab.study_model` give the kept fit, which equals a fit on a pandas frame of the analysed
    participants' answers; `study power` (typed, and from the fit) and `Lab.study_power` keep a table the page
    shows as a curve, with power rising with the participants."""
    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path / "data"))  # kept fits, power runs and jobs of this test
    rng = np.random.default_rng(2)
    design = DESIGN.replace("name: sim-study", "name: model-study")
    with session(study_store) as con:
        study_id = collection.create(con, design)
    page = open_page(study_store, "pages/study.py", {"study": study_id})  # before launch: power, no model
    assert not page.exception and "Power analysis" in [h.value for h in page.subheader]
    assert page.text_input(key="power_counts").value == "20 40 60 80 100"  # multiples of the 4 lists
    assert page.radio(key="power_test").value == "model"  # the analysis's own model and test, by default
    page.text_input(key="power_counts").input("8 12").run()
    page.number_input(key="power_sims").set_value(20).run()
    page.button(key="power_start").click().run()  # typed defaults otherwise: `study power` as a job
    assert not page.exception
    key = page.session_state["_power_job"]
    for _ in range(300):
        if not jobs.alive(key):
            break
        time.sleep(0.2)
    ran = power_analysis.status(key)["table"]
    assert len(ran) == 2 * 3 and ran["participants"].tolist()[::3] == [8, 12]
    assert (
        ran["test"]
        .str.startswith("the analysis's mixed model (value ~ condition + (1 + condition || participant)")
        .all()
    )
    with session(study_store) as con:
        made = study_actions.make_links(con, study_store, study_id, 16, actor=LOCAL)
        examples = store_studies.example_rows(con, study_id).set_index("example_id")
        for link in made:
            who = participant(con, study_store, study_id, link.person)
            answer_all(con, study_id, who, noisy_answers(con, study_id, who.id, examples, rng))
        collection.close(con, study_id)
        kept = collection.analysed(con, study_id).participants
        stored = store_studies.responses(con, study_id)
        targets = stored[(stored["kind"] == "target") & stored["participant_id"].isin(kept)]
        frame = pd.DataFrame(
            {
                "participant": targets["participant_id"],
                "item": targets["trial"].map(lambda e: examples.loc[e, "extra"]["item"]),
                "variant": targets["trial"].map(lambda e: examples.loc[e, "extra"]["variant"]),
                "value": targets["value"],
            }
        ).sort_values(["participant", "item", "variant", "value"], ignore_index=True)  # as the kept fit's rows are
    maximal = "value ~ variant + (1 + variant | participant) + (1 + variant | item)"
    expected = mixed_models.fit(frame, maximal)
    page = open_page(study_store, "pages/study.py", {"study": study_id})
    assert not page.exception
    assert page.text_input(key="fit_formula_variant").value == maximal  # the proposed model, to edit
    assert any("No fit of this model on the answers as they are now" in i.value for i in page.info)
    page.button(key="fit_start").click().run()  # the job: `study model` in a process of its own
    assert not page.exception
    key = f"model-{study_id}-variant"
    for _ in range(600):
        if not jobs.alive(key):
            break
        time.sleep(0.2)
    fitted = Lab(study_store).study_model(study_id)  # the job's kept fit: no fit here
    assert fitted.groups["participant"] == len(kept) and fitted.n == len(frame) and fitted.formula == maximal
    pd.testing.assert_frame_equal(fitted.fixed, expected.fixed, rtol=1e-6)
    pd.testing.assert_frame_equal(fitted.variance, expected.variance, rtol=1e-5)
    assert fitted.fixed.set_index("term").loc["variantd", "estimate"] == pytest.approx(0.6, abs=0.08)
    assert main(["--store", str(study_store), "study", "model", study_id]) == 0
    out = capsys.readouterr().out
    assert f"`{maximal}`" in out and f"Participants: {len(kept)} participants analysed (the study is closed)" in out
    page = open_page(study_store, "pages/study.py", {"study": study_id})
    assert not page.exception
    shown = {len(d.value): d.value for d in page.dataframe}
    assert any(list(t.columns[:3]) == ["term", "estimate", "se"] for t in shown.values())
    typed = ["--intercept", "0.2", "--effect", "b=0.05", "c=0.1", "d=0.2", "--sd-participant", "0.05"]
    typed += ["--sd-item", "0.02", "--sd-residual", "0.1", "--participants", "8", "16", "--sims", "60", "--test", "f1"]
    assert main(["--store", str(study_store), "study", "power", study_id, *typed]) == 0
    table = power_analysis.status(power_analysis.latest(study_id))["table"].set_index(["participants", "contrast"])
    assert table.loc[(16, "b vs a"), "power"] > table.loc[(8, "b vs a"), "power"]
    assert (table["low"] <= table["power"]).all() and (table["power"] <= table["high"]).all()
    assert main(["--store", str(study_store), "study", "power", study_id, "--from-fit", study_id, "--sims", "20",
                 "--participants", "8"]) == 0  # fmt: skip
    assert f"assumed (the mixed-model fit `{maximal}` of model-study" in capsys.readouterr().out
    again = Lab(study_store).study_power(study_id, counts=(8, 16), sims=60, **{
        "intercept": 0.2, "effects": {"b": 0.05, "c": 0.1, "d": 0.2}, "sd_participant": 0.05, "sd_item": 0.02,
        "sd_residual": 0.1}, test="f1")  # fmt: skip
    pd.testing.assert_frame_equal(again.set_index(["participants", "contrast"]), table)  # the same seed, the same
    page = open_page(study_store, "pages/study.py", {"study": study_id})
    assert not page.exception
    shown = [d.value for d in page.dataframe if "power" in d.value.columns]  # the latest run: the API's
    assert len(shown) == 1 and len(shown[0]) == 6 and shown[0]["power"].tolist() == again["power"].round(4).tolist()
    with session(study_store) as con:  # the archive: the fit's tables, the power table, and both in methods.md
        unchosen = studies.archive(con, study_id)["methods.md"].decode()
        files = studies.archive(con, study_id, power_key=power_analysis.latest(study_id))
    assert "3 power analyses of this study kept; none is chosen for this text" in unchosen
    fixed = pd.read_csv(BytesIO(files["model_fixed_effects.csv"]))
    assert fixed["estimate"].tolist() == pytest.approx(fitted.fixed["estimate"].tolist())
    assert pd.read_csv(BytesIO(files["power.csv"]))["power"].tolist() == again["power"].tolist()
    methods = files["methods.md"].decode()
    assert f"`{maximal}`" in methods and "The model is the maximal random-effects structure the design" in methods
    assert "Power was estimated by simulation: 60 simulated studies of this design per participant count" in methods
    assert "analysed at α = 0.05 by the fast approximation: a by-participant paired t test" in methods
    assert "{" not in methods.split("Power was estimated")[1] and "nan" not in methods.lower()


def test_a_pilot_s_answers_give_a_power_analysis_its_assumptions_only_when_chosen(
    study_store, tmp_path, monkeypatch, open_page, capsys
):
    """Issue 55, item 3 (pilots came with issue 56): `study model --pilot` keeps a fit of the pilot's answers, equal to
    a fit on a pandas frame of them; `study power --from-fit S --pilot` and the API assume what it estimates, and the
    Study page offers it under Assume; the real answers' model never reads them."""
    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path / "data"))
    rng = np.random.default_rng(5)
    with session(study_store) as con:
        study_id = collection.create(con, DESIGN.replace("name: sim-study", "name: piloted-power"))
        with pytest.raises(ValueError, match="piloted-power has no pilot answers; make pilot links"):
            mixed_model.chosen(con, study_id, pilot=True)
        examples = store_studies.example_rows(con, study_id).set_index("example_id")
        for link in study_actions.pilot_links(con, study_store, study_id, 8, actor=LOCAL):
            who = links.opened(con, study_store, link.token)
            answer_all(con, study_id, who, noisy_answers(con, study_id, who.id, examples, rng))
        targets = con.execute(
            "SELECT participant_id, trial, value FROM study_responses "
            "WHERE study_id = $s AND pilot AND kind = 'target'",
            {"s": study_id},
        ).df()
        assert mixed_model.frame(con, mixed_model.chosen(con, study_id)).empty  # the real answers: none
        bounds = power_analysis.scale(con, study_id)
    frame = pd.DataFrame(
        {
            "participant": targets["participant_id"],
            "item": targets["trial"].map(lambda e: examples.loc[e, "extra"]["item"]),
            "variant": targets["trial"].map(lambda e: examples.loc[e, "extra"]["variant"]),
            "value": targets["value"],
        }
    ).sort_values(["participant", "item", "variant", "value"], ignore_index=True)  # as the kept fit's rows are
    maximal = "value ~ variant + (1 + variant | participant) + (1 + variant | item)"
    expected = mixed_models.fit(frame, maximal)
    assert main(["--store", str(study_store), "study", "model", study_id, "--pilot"]) == 0
    assert "Participants: the study's pilot, 8 (never analysed" in capsys.readouterr().out
    fitted = Lab(study_store).study_model(study_id, pilot=True)  # the command's kept fit
    assert (fitted.n, fitted.groups["participant"]) == (len(frame), 8)
    pd.testing.assert_frame_equal(fitted.fixed, expected.fixed, rtol=1e-6)
    pd.testing.assert_frame_equal(fitted.variance, expected.variance, rtol=1e-5)
    asked = ["--from-fit", study_id, "--pilot", "--sims", "20", "--participants", "8"]
    assert main(["--store", str(study_store), "study", "power", study_id, *asked]) == 0
    said = (
        f"assumed (the mixed-model fit `{maximal}` of {study_id}'s pilot answers ({len(frame):,} answers, "
        "8 participants; by-participant slopes drawn with their mean SD, uncorrelated; not drawn: item variantb, "
        "item variantc, item variantd))"  # what the simulation does not draw as fitted, said
    )
    assert said in capsys.readouterr().out
    with session(study_store) as con:
        request = power_analysis.request(con, study_id, (8,), 20, from_fit=study_id, pilot=True)
    assert request.assumed == power_analysis.assumed_from_fit(fitted, "variant", request.plan.conditions, bounds)
    assert power_analysis.arguments(request)[-3:] == ["--from-fit", study_id, "--pilot"]  # as a page's job runs it
    table = Lab(study_store).study_power(study_id, counts=(8,), sims=20, from_fit=study_id, pilot=True)
    assert len(table) == 3 and table["power"].between(0, 1).all()
    page = open_page(study_store, "pages/study.py", {"study": study_id})
    assert not page.exception
    assert f"{study_id} (pilot answers)" in page.selectbox(key="power_source").options
    # before launch the model section is the pilot's: its kept fit, so named
    assert any(list(d.value.columns[:2]) == ["term", "estimate"] for d in page.dataframe)
    shown = [c.value.replace("\\", "") for c in page.caption]  # captions are Markdown-escaped
    assert any(f"dataset {study_id} (pilot answers): {maximal}" in c for c in shown)


def one_participant(store: Path, name: str) -> tuple[str, Actor]:
    """A study `name` of DESIGN without its exclusions, and the holder of its one link (not joined yet)."""
    design = unexcluded(name)
    with session(store) as con:
        study_id = collection.create(con, design)
        study_actions.make_links(con, store, study_id, 1, people=[f"{name}-001"], actor=LOCAL)
        return study_id, participant(con, store, study_id, f"{name}-001")


def test_two_tabs_pressing_start_at_once_make_one_participant(study_store):
    """Issue 56, item 6: both joins return the same participant (one list, one seed) and neither raises, and the
    audit has one row for the one joining."""
    study_id, who = one_participant(study_store, "twice")
    audited = "SELECT count(*) FROM audit WHERE target = $t AND outcome = 'done'"
    gate, found, failed = threading.Barrier(2), [], []

    def press_start():
        try:
            with session(study_store) as con:
                gate.wait()
                found.append(study_actions.join(con, study_id, actor=who))
        except Exception as exc:  # what the page would show
            failed.append(exc)

    for _ in range(5):  # five rounds of two presses: the race is not lost every time
        found.clear()
        with session(study_store) as con:
            con.execute("DELETE FROM study_participants WHERE study_id = $s", {"s": study_id})
            before = con.execute(audited, {"t": f"{study_id}: joined"}).fetchone()[0]
        pressing = [threading.Thread(target=press_start) for _ in range(2)]
        for thread in pressing:
            thread.start()
        for thread in pressing:
            thread.join()
        assert failed == [] and len(found) == 2 and found[0]["seed"] == found[1]["seed"]
        with session(study_store) as con:
            assert len(store_studies.participants(con, study_id)) == 1
            assert con.execute(audited, {"t": f"{study_id}: joined"}).fetchone()[0] == before + 1
    # the race as the page met it: this join read "not joined" before the other tab's join committed
    with session(study_store) as con, pytest.MonkeyPatch.context() as patch:
        patch.setattr(collection, "joined", lambda *_: None)
        again = study_actions.join(con, study_id, actor=who)
        assert again["seed"] == found[0]["seed"] and len(store_studies.participants(con, study_id)) == 1


BAD_TIMING = [
    ({"rt_ms": -5.0}, "rt_ms"),
    ({"rt_ms": float("inf")}, "rt_ms"),
    ({"rt_ms": "1200"}, "rt_ms"),
    ({"left_ms": float("nan")}, "left_ms"),
    ({"left_count": 1.5}, "left_count"),
    ({"left_count": True}, "left_count"),
    ({"moved": "yes"}, "moved"),
    ({"moved": False}, "moved"),  # the design requires the slider to be moved
    ({"rt_ms": 900.0}, "moved"),  # issue 63, item 7: a browser's answer that does not say it moved, likewise
    ({"typed": 3}, "timing"),
]


def test_answers_keep_what_the_browser_measured_and_bad_timing_is_refused(study_store):
    """Issue 56, items 2 and 3: an answer with a negative, infinite or non-numeric time, a fractional count, or an
    unmoved slider the design requires moved is refused naming the field (in plain words for the participant) and
    writes nothing; a good one is stored, exported in responses.csv and described in methods.md."""
    study_id, who = one_participant(study_store, "timed")
    with session(study_store) as con:
        study_actions.join(con, study_id, actor=who)
        for measured, field in BAD_TIMING:
            with pytest.raises(collection.StudyRefused) as refused:
                study_actions.answer(con, study_id, 0, 0.5, measured, actor=who)
            assert refused.value.field == field and field not in refused.value.plain
        assert store_studies.responses(con, study_id).empty and store_studies.study(con, study_id)["frozen_at"] is None
        study_actions.answer(con, study_id, 0, 0.5, {"moved": True}, actor=who)  # as a script answers: untimed
        with pytest.raises(collection.StudyRefused) as stale:  # the same position again, from a stale tab
            study_actions.answer(con, study_id, 0, 0.5, {"moved": True}, actor=who)
        assert stale.value.plain == collection.STALE
        measured = {"moved": True, "rt_ms": 1834.5, "left_count": 2, "left_ms": 700.25}
        study_actions.answer(con, study_id, 1, 0.25, measured, actor=who)
        files = studies.archive(con, study_id)
    responses = pd.read_csv(BytesIO(files["responses.csv"])).set_index("position")
    assert responses.loc[0, ["moved", "rt_ms", "left_count", "left_ms"]].isna().tolist() == [False, True, True, True]
    assert responses.loc[1, ["rt_ms", "left_count", "left_ms"]].tolist() == [1834.5, 2, 700.25]
    assert bool(responses.loc[1, "moved"]) and bool(responses.loc[0, "moved"])
    methods = files["methods.md"].decode()
    assert "measured in the participant's browser" in methods  # no median: the one participant has not finished
    assert "no participant is analysed, so no median is given" in methods
    assert "until the participant moved it" in methods


def test_require_movement_is_a_design_option_named_at_its_line():
    assert parse(DESIGN).require_movement and not parse(DESIGN + "require_movement: false\n").require_movement
    with pytest.raises(StudyError) as caught:
        parse(DESIGN + "require_movement: sometimes\n", "mine.yaml")
    assert caught.value.field == "require_movement" and caught.value.line == len(DESIGN.splitlines()) + 1


def answered_as(value: float):
    """A participant's answers: `value` on every slider, yes to the native-language question."""
    return lambda screen: "yes" if screen.trial_kind == "native" else value


def held(con, study_id: str, person: str) -> tuple[int, int, bool]:
    """What the store holds of a participant: responses, crowd ratings in the study's dataset, a participant row."""
    responses, ratings = con.execute(
        "SELECT (SELECT count(*) FROM study_responses WHERE study_id = $s AND participant_id = $p), "
        "(SELECT count(*) FROM ratings WHERE dataset_id = $s AND rater_id = $p)",
        {"s": study_id, "p": person},
    ).fetchone()
    return responses, ratings, store_studies.participant(con, study_id, person) is not None


def archived(con, study_id: str) -> str:
    return "\n".join(data.decode(errors="replace") for data in studies.archive(con, study_id).values())


def test_a_pilot_is_stored_apart_never_analysed_and_leaves_the_design_free(study_store):
    """Issue 56, item 4: pilot links (the study's maker or an owner) preview the lists in turn; their answers make
    no crowd rating, take no list slot, freeze nothing and reach no analysis, export or archive; replacing the
    design deletes them, saying so; the first real answer freezes it."""
    design = DESIGN.replace("sim-study", "piloted")
    with session(study_store) as con:
        study_id = collection.create(con, design)
        made = study_actions.pilot_links(con, study_store, study_id, 2, actor=LOCAL)
        pilots = [links.opened(con, study_store, link.token) for link in made]
        for who in pilots:
            assert answer_all(con, study_id, who, answered_as(0.9)).kind == "done"
        assert [store_studies.participant(con, study_id, w.id)["list_no"] for w in pilots] == [0, 1]
        assert all(held(con, study_id, w.id)[:2] == (len(store_studies.participant(con, study_id, w.id)["trials"]), 0)
                   for w in pilots)  # fmt: skip
        assert store_studies.study(con, study_id)["frozen_at"] is None
        assert store_studies.participants(con, study_id).empty and store_studies.responses(con, study_id).empty
        assert collection.analysed(con, study_id).participants == frozenset() and gradient.ratings(con, study_id).empty
        assert "pilot-" not in archived(con, study_id)
        assert studies.listing(con).set_index("study_id").loc[study_id, ["participants", "responses"]].sum() == 0
        answers = store_studies.pilots(con, study_id)["answers"]
        study_actions.create(con, design.replace("Move the slider.", "Move it."), replace=True, actor=LOCAL)
        assert store_studies.pilots(con, study_id) == {"participants": 0, "answers": 0}
        said = con.execute(
            "SELECT detail FROM audit WHERE action = 'create study' AND target = $s AND outcome = 'done' "
            "ORDER BY happened_at DESC LIMIT 1",
            {"s": study_id},
        ).fetchone()[0]
        assert said == f"deleted {answers} pilot answers of 2 pilots"
        study_actions.make_links(con, study_store, study_id, 1, people=[f"{study_id}-001"], actor=LOCAL)
        who = participant(con, study_store, study_id, f"{study_id}-001")
        assert study_actions.join(con, study_id, actor=who)["list_no"] == 0  # the pilots took no slot
        study_actions.answer(con, study_id, 0, 0.5, actor=who)
        assert store_studies.study(con, study_id)["frozen_at"] is not None
        with pytest.raises(collection.StudyRefused, match="pilot participants'"):
            study_actions.make_links(con, study_store, study_id, 1, people=["pilot-x"], actor=LOCAL)


def test_a_withdrawal_and_a_deletion_remove_exactly_that_participant_even_after_a_restore(study_store, tmp_path):
    """Issue 56, item 4: a participant withdraws through their link and a researcher deletes another on request;
    each removes exactly that participant's responses, crowd ratings and row (from the analysis and the archive
    too), leaves an audit row and a log row without answers, and a restore of a backup taken before keeps them
    deleted; the withdrawn link shows the withdrawn screen and answers nothing more."""
    design = unexcluded("leaving")
    people = ["leaving-001", "leaving-002", "leaving-003"]
    with session(study_store) as con:
        study_id = collection.create(con, design)
        study_actions.make_links(con, study_store, study_id, 3, people=people, actor=LOCAL)
        holders = [participant(con, study_store, study_id, person) for person in people]
        for k, who in enumerate(holders):
            answer_all(con, study_id, who, answered_as(0.123 + k / 10))
        had = {person: held(con, study_id, person) for person in people}
        assert all(count > 0 for found in had.values() for count in found[:2])
        total = con.execute("SELECT count(*) FROM ratings").fetchone()[0]
        folder = backup.write(con, "before the deletions", target=tmp_path / "before")

        assert study_actions.withdraw(con, study_id, actor=holders[0]).kind == "withdrawn"
        gone = study_actions.delete_participant(con, study_id, people[1], "asked by e-mail", actor=LOCAL)
        assert gone == {"responses": had[people[1]][0], "ratings": had[people[1]][1]}

        def deleted_and_kept() -> None:
            assert held(con, study_id, people[0]) == held(con, study_id, people[1]) == (0, 0, False)
            assert held(con, study_id, people[2]) == had[people[2]]
            assert (
                con.execute("SELECT count(*) FROM ratings").fetchone()[0]
                == total - had[people[0]][1] - had[people[1]][1]
            )
            assert collection.analysed(con, study_id).participants == frozenset(people[2:])
            assert set(studies.condition_means(con, study_id)["participants"]) == {1}
            shown = archived(con, study_id)
            assert people[2] in shown and people[0] not in shown and people[1] not in shown
            exported = pd.read_csv(BytesIO(studies.archive(con, study_id)["responses.csv"]))
            values = set(exported["value"].dropna())  # their answers gone (compared as values: the text holds time
            assert 0.323 in values and not values & {0.123, 0.223}  # stamps whose digits can read "0.123" by chance)

        deleted_and_kept()
        log = store_studies.deletions(con, study_id)
        assert list(log.columns) == ["participant_id", "deleted_at", "deleted_by", "reason"]
        assert log[["participant_id", "deleted_by", "reason"]].values.tolist() == [
            [people[0], people[0], "withdrawn by the participant"],
            [people[1], LOCAL.id, "asked by e-mail"],
        ]
        audited = con.execute(
            "SELECT actor, action, target, detail FROM audit WHERE outcome = 'done' AND "
            "(target = $w OR action = 'delete participant data') ORDER BY happened_at",
            {"w": f"{study_id}: withdrew"},
        ).fetchall()
        assert audited == [
            (people[0], "respond", f"{study_id}: withdrew", None),
            (LOCAL.id, "delete participant data", f"{study_id}: participant {people[1]}", None),
        ]
        for who in holders[:2]:  # their links: the withdrawn screen, nothing taken again
            assert study_actions.screen(con, study_id, actor=who).kind == "withdrawn"
            with pytest.raises(collection.StudyRefused) as refused:
                study_actions.join(con, study_id, actor=who)
            assert refused.value.plain == collection.WITHDRAWN
            with pytest.raises(collection.StudyRefused):
                study_actions.answer(con, study_id, 0, 0.5, actor=who)
        with pytest.raises(collection.StudyRefused, match="deleted"):
            study_actions.delete_participant(con, study_id, people[0], "again", actor=LOCAL)

        backup.restore(con, folder)
        deleted_and_kept()
        assert len(store_studies.deletions(con, study_id)) == 2


def test_a_restore_during_a_running_study_keeps_every_answer_given_since(study_store, tmp_path):
    """Issue 63, item 2: a backup is taken mid-study; then one participant goes on and finishes, another starts and
    finishes, a third withdraws. Restoring the backup keeps every answer and participant row given since (finished
    stays finished), leaves no crowd rating without its answer, and the withdrawn participant stays deleted; a
    study deleted since comes back whole."""
    design = unexcluded("restored")
    people = ["restored-001", "restored-002", "restored-003"]
    with session(study_store) as con:
        study_id = collection.create(con, design)
        study_actions.make_links(con, study_store, study_id, 3, people=people, actor=LOCAL)
        first, second, third = (participant(con, study_store, study_id, person) for person in people)
        answer_all(con, study_id, third, answered_as(0.3))
        study_actions.join(con, study_id, actor=first)
        screen = study_actions.screen(con, study_id, actor=first)
        for _ in range(3):  # three answers before the backup
            screen = study_actions.answer(con, study_id, screen.position, answered_as(0.1)(screen), actor=first)
        folder = backup.write(con, "mid-study", target=tmp_path / "mid")
        assert answer_all_from_join(con, study_id, first).kind != "trial"
        answer_all(con, study_id, second, answered_as(0.2))
        assert study_actions.withdraw(con, study_id, actor=third).kind == "withdrawn"
        before = {person: held(con, study_id, person) for person in people}
        finished = con.execute(
            "SELECT participant_id, finished_at FROM study_participants WHERE study_id = $s ORDER BY 1", {"s": study_id}
        ).fetchall()
        answers = con.execute("SELECT count(*) FROM study_responses WHERE study_id = $s", {"s": study_id}).fetchone()

        backup.restore(con, folder)
        assert {person: held(con, study_id, person) for person in people} == before
        assert before[people[2]] == (0, 0, False) and before[people[1]][0] > 3 and before[people[0]][0] > 3
        assert con.execute(
            "SELECT participant_id, finished_at FROM study_participants WHERE study_id = $s ORDER BY 1", {"s": study_id}
        ).fetchall() == finished and all(when is not None for _, when in finished)
        assert (
            con.execute("SELECT count(*) FROM study_responses WHERE study_id = $s", {"s": study_id}).fetchone()
            == answers
        )
        orphans = con.execute(
            "SELECT count(*) FROM ratings r WHERE r.dataset_id = $s AND NOT EXISTS (SELECT 1 FROM study_responses a "
            "WHERE a.study_id = r.dataset_id AND a.participant_id = r.rater_id AND a.trial = r.example_id)",
            {"s": study_id},
        ).fetchone()[0]
        assert orphans == 0
        con.execute("DELETE FROM study_responses WHERE study_id = $s", {"s": study_id})  # lost since the backup
        backup.restore(con, folder)
        assert held(con, study_id, people[0])[0] == 3  # what the backup held comes back


def test_only_the_studys_maker_or_an_owner_pilots_it_or_deletes_a_participant(study_store, tmp_path):
    """'pilot study' and 'delete participant data' are the study's maker's or an owner's: a viewer and another
    analyst are refused (audited, nothing deleted); the maker may."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(study_store, path)
    maker, other, viewer, owner = (
        Actor(f"{role}@lab.example", role.rstrip("2"), "sign-in") for role in ("analyst", "analyst2", "viewer", "owner")
    )
    give_roles(path, maker, other, viewer, owner)
    design = DESIGN.replace("sim-study", "guarded")
    with session(path) as con:
        study_id = study_actions.create(con, design, actor=maker)
        study_actions.make_links(con, path, study_id, 1, people=["guarded-001"], actor=maker)
        who = participant(con, path, study_id, "guarded-001")
        study_actions.join(con, study_id, actor=who)
        study_actions.answer(con, study_id, 0, 0.5, actor=who)
        for person in (viewer, other):
            with pytest.raises(Forbidden):
                study_actions.delete_participant(con, study_id, "guarded-001", "asked", actor=person)
            with pytest.raises(Forbidden):
                study_actions.pilot_links(con, path, study_id, actor=person)
        with pytest.raises(Forbidden):  # a participant cannot delete someone, nor pilot
            study_actions.delete_participant(con, study_id, "guarded-001", "asked", actor=who)
        refused = con.execute(  # this study's (a study's own refusals by its rules are audited 'refused' too)
            "SELECT actor, action FROM audit WHERE outcome = 'refused' AND action IN "
            "('delete participant data', 'pilot study') AND target LIKE $t ORDER BY happened_at",
            {"t": f"%{study_id}%"},
        ).fetchall()
        assert refused == [
            (viewer.id, "delete participant data"),
            (viewer.id, "pilot study"),
            (other.id, "delete participant data"),
            (other.id, "pilot study"),
            (who.id, "delete participant data"),
        ]
        assert held(con, study_id, "guarded-001") == (1, 0, True)  # a practice answer: no rating
        assert len(study_actions.pilot_links(con, path, study_id, actor=maker)) == 1
        study_actions.delete_participant(con, study_id, "guarded-001", "asked", actor=owner)
        assert held(con, study_id, "guarded-001") == (0, 0, False)


PROLIFIC = 'platform: {name: prolific, completion: "https://app.prolific.com/submissions/complete?cc={code}&p={id}"}\n'


def general_study(store: Path, name: str, platform: str = PROLIFIC, cap: int = 2, maker: Actor = LOCAL):
    """A study `name` of DESIGN (no exclusions) with a recruitment platform, and its general link's holder."""
    design = unexcluded(name, platform)
    with session(store) as con:
        study_id = study_actions.create(con, design, actor=maker)
        link = study_actions.general_link(con, store, study_id, cap, actor=maker)
        return study_id, links.opened(con, store, link.token)


def test_a_general_link_starts_one_participant_per_platform_id_up_to_its_cap(study_store, tmp_path):
    """Issue 56, item 1: each platform id joins once, with its id and kept parameters stored under a random
    participant id; the same id again (without this browser's token) is told it has started; the cap counts people
    in progress and finished, and a withdrawal frees a place; an MTurk preview makes no participant; a release lets
    the next browser continue the same participant; the completion URL carries the code and the id."""
    study_id, general = general_study(study_store, "recruited")
    url = {"PROLIFIC_PID": "5f00aa", "STUDY_ID": "st1", "SESSION_ID": "se1"}
    with session(study_store) as con:
        assert study_actions.arrive(con, study_store, study_id, url, None, actor=general) == ("welcome", None)
        token = study_actions.join_general(con, study_store, study_id, url, actor=general)
        found = store_studies.by_platform(con, study_id, "5f00aa")
        assert found["platform_keep"] == {"STUDY_ID": "st1", "SESSION_ID": "se1"} and found["platform"] == "prolific"
        assert "5f00aa" not in found["participant_id"]
        assert study_actions.arrive(con, study_store, study_id, url, token, actor=general) == ("resume", token)
        assert study_actions.arrive(con, study_store, study_id, url, None, actor=general) == ("taken", None)
        with pytest.raises(collection.StudyRefused) as taken:
            study_actions.join_general(con, study_store, study_id, url, actor=general)
        assert taken.value.plain == collection.TAKEN
        who = links.opened(con, study_store, token)
        assert answer_all_from_join(con, study_id, who).kind == "done"
        code = store_studies.participant(con, study_id, who.id)["completion_code"]
        onward = study_actions.completion(con, study_id, actor=who)
        assert onward.url == f"https://app.prolific.com/submissions/complete?cc={code}&p=5f00aa"

        second = study_actions.join_general(con, study_store, study_id, {"PROLIFIC_PID": "6a"}, actor=general)
        with pytest.raises(collection.StudyRefused) as full:  # 2 started (one finished, one in progress): the cap
            study_actions.join_general(con, study_store, study_id, {"PROLIFIC_PID": "7b"}, actor=general)
        assert full.value.plain == collection.FULL
        study_actions.withdraw(con, study_id, actor=links.opened(con, study_store, second))
        assert store_studies.by_platform(con, study_id, "6a") is None  # the id left with the row
        study_actions.join_general(con, study_store, study_id, {"PROLIFIC_PID": "7b"}, actor=general)

        released = study_actions.release(con, study_id, "5f00aa", actor=LOCAL)
        assert released == who.id
        with pytest.raises(links.LinkRefused):  # the old browser's token opens nothing now
            links.opened(con, study_store, token)
        again = study_actions.join_general(con, study_store, study_id, url, actor=general)  # another browser
        assert links.opened(con, study_store, again).id == who.id
        assert study_actions.screen(con, study_id, actor=links.opened(con, study_store, again)).kind == "done"
        with pytest.raises(collection.StudyRefused):  # nobody without an id joins
            study_actions.join_general(con, study_store, study_id, {}, actor=general)

    mturk = "platform: {name: mturk}\n"
    study_id, general = general_study(study_store, "turked", mturk)
    preview = {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H1"}
    with session(study_store) as con:
        assert study_actions.arrive(con, study_store, study_id, preview, None, actor=general) == ("preview", None)
        with pytest.raises(collection.StudyRefused):
            study_actions.join_general(con, study_store, study_id, preview, actor=general)
        assert store_studies.participant_count(con, study_id) == 0
        worker = {"workerId": "W1", "assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}
        who = links.opened(
            con, study_store, study_actions.join_general(con, study_store, study_id, worker, actor=general)
        )
        answer_all_from_join(con, study_id, who)
        onward = study_actions.completion(con, study_id, actor=who)
        assert onward.url == "https://www.mturk.com/mturk/externalSubmit" and onward.fields["assignmentId"] == "A1"


def answer_all_from_join(con, study_id: str, who: Actor) -> collection.Screen:
    """Every trial of a joined participant answered (0.5 on sliders, yes to the native question)."""
    screen = study_actions.screen(con, study_id, actor=who)
    while screen.kind == "trial":
        screen = study_actions.answer(con, study_id, screen.position, answered_as(0.5)(screen), actor=who)
    return screen


def test_platform_ids_stay_out_of_methods_and_the_archive_and_leave_on_withdrawal(study_store, tmp_path):
    """Platform ids are personal data: not in methods.md nor any file of the default archive; the archive for the
    lab's own records has them (the study's maker or an owner; the CLI's --with-platform-ids too); a withdrawal
    deletes them with the row."""
    study_id, general = general_study(study_store, "private", cap=5)
    with session(study_store) as con:
        tokens = [
            study_actions.join_general(con, study_store, study_id, {"PROLIFIC_PID": pid, "SESSION_ID": f"s-{pid}"},
                                       actor=general)
            for pid in ("PIDALPHA77", "PIDBETA88")
        ]  # fmt: skip
        for token in tokens:
            answer_all_from_join(con, study_id, links.opened(con, study_store, token))
        shown = archived(con, study_id)
        assert "PIDALPHA77" not in shown and "s-PIDALPHA77" not in shown and "PIDBETA88" not in shown
        assert "PIDALPHA77" not in studies.methods(con, study_id)
        with zipfile.ZipFile(BytesIO(study_actions.archive_with_platform_ids(con, study_id, actor=LOCAL))) as kept:
            ids = kept.read(f"{study_id}/platform_ids.csv").decode()
        assert "PIDALPHA77" in ids and "PIDBETA88" in ids
    for out, kept in ((tmp_path / "shared", False), (tmp_path / "ours", True)):
        flag = ["--with-platform-ids"] if kept else []
        assert main(["--store", str(study_store), "study", "export", study_id, "--out", str(out), *flag]) == 0
        assert ("PIDALPHA77" in "".join(f.read_text() for f in out.iterdir())) is kept
    with session(study_store) as con:
        study_actions.withdraw(con, study_id, actor=links.opened(con, study_store, tokens[0]))
        assert (
            con.execute("SELECT count(*) FROM study_participants WHERE platform_id = 'PIDALPHA77'").fetchone()[0] == 0
        )
        assert "PIDALPHA77" not in study_actions.platform_ids(con, study_id, actor=LOCAL).to_string()


@pytest.mark.parametrize(
    ("platform", "field", "line"),
    [
        ("platform: {name: qualtrics}\n", "platform.name", 19),
        ("platform:\n  name: prolific\n  completion: ftp://x/{code}\n", "platform.completion", 21),
        ("platform:\n  name: prolific\n  completion: https://x/?cc={secret}\n", "platform.completion", 21),
        ("platform:\n  name: sona\n", "platform", 20),  # no completion: the platform's mapping, from its first line
        ("platform:\n  name: mturk\n  keep: [hitId]\n", "platform.keep", 21),
    ],
)
def test_a_bad_platform_names_its_field_and_line(platform, field, line):
    design = DESIGN.replace("exclusions:\n  - {rule: controls_sd, k: 2, direction: above}\n", platform)
    with pytest.raises(StudyError) as bad:
        parse(design)
    assert bad.value.field == field and bad.value.line == line


def test_only_the_studys_maker_or_an_owner_makes_a_general_link(study_store, tmp_path):
    """'create general link' and 'manage platform ids' are the study's maker's or an owner's: a viewer and another
    analyst are refused, audited, and no link is made."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(study_store, path)
    maker, other, viewer = (
        Actor(f"{role}@lab.example", role.rstrip("2"), "sign-in") for role in ("analyst", "analyst2", "viewer")
    )
    give_roles(path, maker, other, viewer)
    study_id, _ = general_study(path, "gated", maker=maker)
    with session(path) as con:
        for person in (viewer, other):
            with pytest.raises(Forbidden):
                study_actions.general_link(con, path, study_id, 10, actor=person)
            with pytest.raises(Forbidden):
                study_actions.platform_ids(con, study_id, actor=person)
        refused = con.execute(
            "SELECT actor, action FROM audit WHERE outcome = 'refused' AND action IN "
            "('create general link', 'manage platform ids') ORDER BY happened_at"
        ).fetchall()
        assert refused == [(p.id, a) for p in (viewer, other) for a in ("create general link", "manage platform ids")]
        assert store_links.listing(con, f"study:{study_id}")["cap"].notna().sum() == 1  # the maker's only


def test_a_withdrawn_prolific_participant_is_told_to_return_the_submission_and_cannot_start_again(
    study_store, open_page
):
    """Issue 63, item 3: after withdrawing, a participant who came from Prolific reads, on their link's page, that
    their answers are gone and that they should return the submission on Prolific; the same Prolific id cannot start
    again from another browser — only a digest of it is kept — until the researcher releases it, and then starts as
    a new participant."""
    study_id, general = general_study(study_store, "returning")
    url = {"PROLIFIC_PID": "5f00bb", "STUDY_ID": "st1", "SESSION_ID": "se1"}
    with session(study_store) as con:
        token = study_actions.join_general(con, study_store, study_id, url, actor=general)
        assert study_actions.withdraw(con, study_id, actor=links.opened(con, study_store, token)).kind == "withdrawn"
    page = open_page(study_store, "pages/participate.py", {"link": token})
    assert not page.exception and [t.value for t in page.title] == ["Your answers were withdrawn"]
    assert [i.value for i in page.info] == [collection.WITHDRAWN, collection.LEAVING["prolific"]]
    assert "please return your submission there" in collection.LEAVING["prolific"]
    with session(study_store) as con:  # the same id from another browser: not started again
        assert study_actions.arrive(con, study_store, study_id, url, None, actor=general) == ("withdrawn", None)
        with pytest.raises(collection.StudyRefused) as refused:
            study_actions.join_general(con, study_store, study_id, url, actor=general)
        assert refused.value.plain == collection.WITHDREW
        kept = con.execute("SELECT platform_key FROM study_deletions WHERE study_id = $s", {"s": study_id}).fetchall()
        assert "5f00bb" not in str(kept) and kept[0][0] == store_studies.platform_key(study_id, "5f00bb")
        gone = store_studies.deletions(con, study_id)["participant_id"].tolist()
        assert study_actions.release(con, study_id, "5f00bb", actor=LOCAL) == gone[0]  # the researcher allows it
        assert study_actions.arrive(con, study_store, study_id, url, None, actor=general) == ("welcome", None)
        again = links.opened(
            con, study_store, study_actions.join_general(con, study_store, study_id, url, actor=general)
        )
        assert again.id != gone[0] and store_studies.participant(con, study_id, again.id) is not None


def test_a_place_held_past_the_time_limit_or_returned_is_free_again(study_store):
    """Issue 63, item 4: with a 30-minute time limit, a participant who has not finished 31 minutes after starting is
    timed out when the next one arrives: the cap and their list's balance count them no more, their link says their
    time ran out and takes no answer, and the per-list progress reports them; a submission the researcher marks
    returned (by its Prolific id) frees its place the same way, and a finished one cannot be marked returned.
    (The 31 minutes are written into started_at: the test does not wait half an hour.)"""
    study_id, general = general_study(study_store, "limited", platform=PROLIFIC + "time_limit: 30\n", cap=2)
    url = {"STUDY_ID": "st1", "SESSION_ID": "se1"}

    def arrive(pid: str) -> Actor:
        token = study_actions.join_general(con, study_store, study_id, url | {"PROLIFIC_PID": pid}, actor=general)
        return links.opened(con, study_store, token)

    with session(study_store) as con:
        late, kept = arrive("pid-late"), arrive("pid-kept")
        with pytest.raises(collection.StudyRefused) as full:
            arrive("pid-third")
        assert full.value.plain == collection.FULL
        con.execute(
            "UPDATE study_participants SET started_at = started_at - INTERVAL 31 MINUTE WHERE participant_id = $p",
            {"p": late.id},
        )
        third = arrive("pid-third")  # the late one's place is free: they are timed out now
        assert (
            store_studies.ended(con, study_id, late.id) == "timed out"
            and store_studies.ended(con, study_id, kept.id) is None
        )
        lists = store_studies.list_counts(con, study_id)
        assert (
            sum(lists.values()) == 2 and lists.get(store_studies.participant(con, study_id, late.id)["list_no"], 0) <= 1
        )
        with pytest.raises(collection.StudyRefused) as ran_out:
            study_actions.screen(con, study_id, actor=late)
        assert ran_out.value.plain == collection.ENDED["timed out"]
        with pytest.raises(collection.StudyRefused):
            study_actions.answer(con, study_id, 0, 0.5, actor=late)
        table = studies.progress(con, study_id)
        assert table["timed_out"].sum() == 1 and table["returned"].sum() == 0 and table["started"].sum() == 3
        assert study_actions.mark_returned(con, study_id, "pid-kept", actor=LOCAL) == kept.id
        fourth = arrive("pid-fourth")  # the returned submission's place
        assert studies.progress(con, study_id)["returned"].sum() == 1
        with pytest.raises(collection.StudyRefused) as returned:
            study_actions.screen(con, study_id, actor=kept)
        assert returned.value.plain == collection.ENDED["returned"]
        assert answer_all_from_join(con, study_id, fourth).kind == "done"
        with pytest.raises(collection.StudyRefused, match="has finished"):
            study_actions.mark_returned(con, study_id, "pid-fourth", actor=LOCAL)
        assert answer_all_from_join(con, study_id, third).kind == "done"


SCREENING = (
    'screening:\n  - {name: english, question: "Is English your first language?", options: [yes, no], accept: [yes]}\n'
    "completion_codes: {screened_out: SCR1, failed_attention: ATT1, no_consent: NOC1}\n"
)


def test_screening_and_a_completion_code_per_path(study_store, open_page):
    """Issue 63, item 5: screening questions asked with the welcome; an answer the design does not accept ends the
    study politely at once, with the screened_out code sent to the platform's URL and no place or list slot held;
    an unanswered question is refused naming it; a participant who failed the attention check finishes with the
    failed_attention code, one who passed with the completed code; one who does not consent is sent on with the
    no_consent code and makes no participant; the welcome page asks the questions and keeps Start off until each is
    answered."""
    design_text = unexcluded("screened", PROLIFIC + SCREENING)
    url = {"STUDY_ID": "st1", "SESSION_ID": "se1"}
    with session(study_store) as con:
        study_id = study_actions.create(con, design_text, actor=LOCAL)
        made = study_actions.general_link(con, study_store, study_id, 3, actor=LOCAL)
        general = links.opened(con, study_store, made.token)
        with pytest.raises(collection.StudyRefused) as unanswered:
            study_actions.join_general(con, study_store, study_id, url | {"PROLIFIC_PID": "p-out"}, actor=general)
        assert unanswered.value.field == "screening.english"
        token = study_actions.join_general(
            con, study_store, study_id, url | {"PROLIFIC_PID": "p-out"}, {"english": "no"}, actor=general
        )
        out = links.opened(con, study_store, token)
        shown = study_actions.screen(con, study_id, actor=out)
        assert (shown.kind, shown.code) == ("screened", "SCR1") and store_studies.ended(
            con, study_id, out.id
        ) == "screened out"
        onward = study_actions.completion(con, study_id, actor=out).url
        assert onward == "https://app.prolific.com/submissions/complete?cc=SCR1&p=p-out"
        assert sum(store_studies.list_counts(con, study_id).values()) == 0  # no place, no list slot held
        assert studies.progress(con, study_id)["screened_out"].sum() == 1
        design = collection.design_of(collection.study(con, study_id))
        arrival = collection.arrival(design, url | {"PROLIFIC_PID": "p-no"})
        assert collection.no_consent(design, arrival).url.endswith("cc=NOC1&p=p-no")
        careless, careful = (
            links.opened(con, study_store, study_actions.join_general(
                con, study_store, study_id, url | {"PROLIFIC_PID": pid}, {"english": "yes"}, actor=general))
            for pid in ("p-careless", "p-careful")
        )  # fmt: skip
        for who, attention in ((careless, 0.0), (careful, 1.0)):
            screen = study_actions.screen(con, study_id, actor=who)
            while screen.kind == "trial":
                given = (
                    "yes" if screen.trial_kind == "native" else attention if screen.trial_kind == "attention" else 0.5
                )
                screen = study_actions.answer(con, study_id, screen.position, given, actor=who)
        assert study_actions.screen(con, study_id, actor=careless).code == "ATT1"
        assert study_actions.screen(con, study_id, actor=careful).code not in ("ATT1", "SCR1", "")
    page = open_page(study_store, "pages/participate.py", url | {"link": made.token, "PROLIFIC_PID": "p-new"})
    assert not page.exception and [r.label for r in page.radio] == ["Is English your first language?"]
    assert page.button(key="no_consent").label == "I do not agree"
    start = next(b for b in page.button if b.label == "Start")
    assert start.disabled


def test_a_participants_only_server_opens_study_links_and_nothing_else(study_store, open_page, monkeypatch):
    """Issue 56, item 1 (README: *Participants-only server*): PLAB_MODE=server with no [auth] section; a
    participant's link opens their study's welcome and nothing of the lab; without a link every page says only that
    sign-in is not configured, and shows no data."""
    study_id, who = one_participant(study_store, "public")
    with session(study_store) as con:
        token = links.token(study_store, links.row_of(con, who.link_id))
    monkeypatch.setenv("PLAB_MODE", "server")
    # a server's page latches "sign-in required" for the whole process (backend.identity.actor); this one is
    # pytest's, so the latch is put back after the test, or every later test in it would be refused
    monkeypatch.setattr("backend.identity.actor._SIGN_IN_REQUIRED", False)
    page = open_page(study_store, "pages/participate.py", {"link": token})
    shown = " ".join(e.value for e in page.title) + " ".join(str(e.value) for e in page.markdown)
    assert "Welcome" in shown and [b.label for b in page.button] == ["Start", "Yes, withdraw and delete my answers"]
    assert not page.dataframe and not page.sidebar.button
    for path in ("pages/study.py", "pages/explore.py"):
        page = open_page(study_store, path, {"study": study_id})
        said = " ".join(str(e.value) for e in page.error)
        assert "sign-in is not configured" in said, said
        assert not page.dataframe and not page.selectbox and study_id not in str(page.main)
