"""Demographics and a debrief in a judgement study (issue 56, item 5): the design's questions parsed with their faults
named, asked once after the last trial through the participant's door (a required one left blank refused, nothing
stored), the participant finished only then, the debrief on the done screen; the answers personal data — read only by
the study's maker or an owner, out of methods.md and the shareable archive, in the maker's archive — and gone with the
participant on withdrawal, on deletion and after a restore."""

from __future__ import annotations

import html
import shutil
import zipfile
from io import BytesIO

import pandas as pd
import pytest

from backend.actions import studies as study_actions
from backend.analysis import studies
from backend.api import Lab
from backend.identity import links
from backend.identity.actor import Actor
from backend.identity.permissions import Forbidden
from backend.store import backup
from backend.store import studies as store_studies
from backend.store.access import session
from backend.studies import collection
from backend.studies.design import PRESETS, StudyError, parse
from tests.helpers.people import LOCAL, give_roles
from tests.helpers.studies import holder, item_store, token_for
from ui import widgets

DESIGN = """\
name: asked
dataset: demo-items
item: item
condition: variant
assignment: latin
text: "{input}"
question: "How certain is the speaker that {hypothesis}?"
scale: {kind: slider, min: 0, max: 1}
native_language: English
demographics:
  - {preset: age_band, required: true}
  - {preset: native_languages}
  - {name: handedness, question: "Which hand do you write with?", kind: choice, options: [left, right, both]}
  - {name: years_abroad, question: "How many years have you lived abroad?", kind: number, min: 0, max: 90}
debrief: "Thank you. This study asked how certain a speaker seems; nothing was a trick."
"""
ANSWERS = {"age_band": "25-34", "native_languages": "Welsh, English", "handedness": "left", "years_abroad": "3"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A new store (no ingest) holding a small item set: 3 items × 2 conditions."""
    return item_store(tmp_path_factory.mktemp("demographics") / "lab.duckdb", "demo-items", 3)


@pytest.mark.parametrize(
    ("change", "field", "line"),
    [
        (("{preset: age_band, required: true}", "{preset: shoe_size}"), "demographics.0.preset", 11),
        (("options: [left, right, both]", "options: [left]"), "demographics.2.options", 13),
        (("kind: number, min: 0, max: 90", "kind: number, min: 9, max: 1"), "demographics.3.max", 14),
        (("kind: number, min: 0", "kind: dial, min: 0"), "demographics.3.kind", 14),
        (("name: handedness", "name: Hand Edness"), "demographics.2.name", 13),
        (("name: years_abroad", "name: handedness"), "demographics.3.name", 14),  # asked twice
        (("{preset: native_languages}", "{preset: native_languages, required: maybe}"), "demographics.1.required", 12),
        (("{preset: native_languages}", "{preset: native_languages, colour: red}"), "demographics.1.colour", 12),
        (("kind: choice, options", "kind: text, options"), "demographics.2.options", 13),
        (("name: years_abroad", "name: participant_id"), "demographics.3.name", 14),  # demographics.csv's column
        (("debrief: ", "debrief: 12345 #"), "debrief", 15),  # a number, not text
    ],
)
def test_a_bad_question_names_its_field_and_line(change, field, line):
    with pytest.raises(StudyError) as bad:
        parse(DESIGN.replace(*change), "mine.yaml")
    assert bad.value.field == field and bad.value.line == line and "mine.yaml" in str(bad.value)


def test_a_preset_is_one_line_and_what_is_given_beside_it_wins():
    design = parse(DESIGN)
    age, languages = design.demographics[:2]
    assert (age.name, age.kind, age.required) == ("age_band", "choice", True)  # required: given beside the preset
    assert list(age.options) == PRESETS["age_band"]["options"] and "Prefer not to say" in age.options
    assert (languages.name, languages.kind, languages.required) == ("native_languages", "text", False)
    assert design.debrief.startswith("Thank you.") and design.as_dict()["demographics"][3]["max"] == 90


def through_the_trials(con, study_id: str, who: Actor) -> collection.Screen:
    """`who` joined, every trial answered (0.5; yes to the native question): the screen after the last."""
    study_actions.join(con, study_id, actor=who)
    screen = study_actions.screen(con, study_id, actor=who)
    while screen.kind == "trial":
        given = "yes" if screen.trial_kind == "native" else 0.5
        screen = study_actions.answer(con, study_id, screen.position, given, actor=who)
    return screen


def stored(con, study_id: str, person: str) -> int:
    """How many demographic rows the store holds of the participant."""
    return con.execute(
        "SELECT count(*) FROM study_demographics WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": person},
    ).fetchone()[0]


def every_file(files: dict[str, bytes]) -> str:
    return "\n".join(data.decode(errors="replace") for data in files.values())


def test_a_participant_finishes_only_with_the_questions_answered_and_reads_the_debrief(store):
    """After the last trial: the demographics screen, not finished (no code, no completion URL, not analysed); a
    required question left blank and a number out of range are refused in plain words naming the question, with
    nothing stored; then all stored in one go, finished, and the done screen carries the debrief and the code; a
    second submission is refused, and so is one before the last trial or after the study closed. A pilot's are stored
    apart and never read with the real ones."""
    with session(store) as con:
        study_id = study_actions.create(con, DESIGN, actor=LOCAL)
        who = holder(con, store, study_id, "asked-001")
        assert through_the_trials(con, study_id, who).kind == "demographics"
        row = store_studies.participant(con, study_id, who.id)
        assert row["finished_at"] is None and row["completion_code"] is None
        assert collection.analysed(con, study_id).excluded_by == {who.id: "not finished"}
        for change, field, plain in (
            ({"age_band": None}, "demographics.age_band", 'Please answer "What is your age?"'),
            ({"years_abroad": "120"}, "demographics.years_abroad", "from 0 to 90"),
            ({"handedness": "neither"}, "demographics.handedness", "choose one of left, right, both"),
        ):
            with pytest.raises(collection.StudyRefused) as refused:
                study_actions.give_demographics(con, study_id, ANSWERS | change, actor=who)
            assert refused.value.field == field and plain in refused.value.plain and "demographics." not in plain
            assert stored(con, study_id, who.id) == 0
            assert store_studies.participant(con, study_id, who.id)["finished_at"] is None
        done = study_actions.give_demographics(con, study_id, ANSWERS | {"handedness": ""}, actor=who)
        assert done.kind == "done" and done.debrief == parse(DESIGN).debrief
        assert done.code == store_studies.participant(con, study_id, who.id)["completion_code"] != ""
        assert study_actions.screen(con, study_id, actor=who) == done
        given = store_studies.demographics(con, study_id).set_index("name")["value"]
        assert given.dropna().to_dict() == {k: v for k, v in ANSWERS.items() if k != "handedness"}
        assert given.isna()["handedness"]  # left blank: a row without a value
        assert collection.analysed(con, study_id).participants == {who.id}
        with pytest.raises(collection.StudyRefused, match="already"):
            study_actions.give_demographics(con, study_id, ANSWERS, actor=who)
        early = holder(con, store, study_id, "asked-002")
        study_actions.join(con, study_id, actor=early)
        with pytest.raises(collection.StudyRefused, match="not every trial"):
            study_actions.give_demographics(con, study_id, ANSWERS, actor=early)

        pilot = links.opened(con, store, study_actions.pilot_links(con, store, study_id, actor=LOCAL)[0].token)
        assert through_the_trials(con, study_id, pilot).kind == "demographics"
        assert study_actions.give_demographics(con, study_id, ANSWERS, actor=pilot).kind == "done"
        assert stored(con, study_id, pilot.id) == len(ANSWERS)
        assert list(studies.demographics(con, study_id)["participant_id"]) == [who.id]  # the pilot's stay apart
        late = holder(con, store, study_id, "asked-003")
        through_the_trials(con, study_id, late)
        study_actions.close(con, study_id, actor=LOCAL)  # before they sent the questions: they did not finish
        with pytest.raises(collection.StudyRefused, match="closed"):
            study_actions.give_demographics(con, study_id, ANSWERS, actor=late)
        assert stored(con, study_id, late.id) == 0 and late.id not in collection.analysed(con, study_id).participants


def test_only_the_maker_or_an_owner_reads_them_and_no_shareable_file_holds_them(store, tmp_path):
    """Demographic answers are personal data: the study's maker and an owner read them (audited), another analyst, a
    viewer and a participant are refused; methods.md names the questions only, the default archive holds no answer,
    the maker's archive adds demographics.csv (one column per question)."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(store, path)
    maker, other, viewer, owner = (
        Actor(f"{role}@lab.example", role.rstrip("2"), "sign-in") for role in ("analyst", "analyst2", "viewer", "owner")
    )
    give_roles(path, maker, other, viewer, owner)
    with session(path) as con:
        study_id = study_actions.create(con, DESIGN.replace("name: asked", "name: private"), actor=maker)
        who = holder(con, path, study_id, "private-001")
        through_the_trials(con, study_id, who)
        study_actions.give_demographics(con, study_id, ANSWERS, actor=who)
        for person in (other, viewer, who):
            with pytest.raises(Forbidden):
                study_actions.demographics(con, study_id, actor=person)
        with pytest.raises(Forbidden):  # the notebook's door is the same
            Lab(path, actor=other).study_demographics(study_id)
        for person in (maker, owner):
            table = study_actions.demographics(con, study_id, actor=person)
            assert list(table.columns) == ["participant_id", "answered_at", *ANSWERS]
            assert table.drop(columns="answered_at").to_dict("records") == [{"participant_id": who.id} | ANSWERS]
        reads = con.execute(
            "SELECT actor, outcome FROM audit WHERE target = $t ORDER BY happened_at",
            {"t": f"{study_id}: read demographics"},
        ).fetchall()
        assert [(p.id, "refused") for p in (other, viewer, who, other)] + [
            (maker.id, "done"),
            (owner.id, "done"),
        ] == reads

        methods = studies.methods(con, study_id)
        assert '"What is your age?" (choice, 18-24' in methods and "A debrief was shown" in methods
        shareable = studies.archive(con, study_id)
        assert "demographics.csv" not in shareable
        assert "Welsh" not in every_file(shareable) and "Welsh" not in methods  # an answer; the questions are in
        assert "handedness" in shareable["design.yaml"].decode()  # the design as declared
        with zipfile.ZipFile(BytesIO(study_actions.archive_with_platform_ids(con, study_id, actor=maker))) as kept:
            csv = pd.read_csv(BytesIO(kept.read(f"{study_id}/demographics.csv")), dtype=str)
        assert csv.drop(columns="answered_at").to_dict("records") == [{"participant_id": who.id} | ANSWERS]
        with pytest.raises(Forbidden):
            study_actions.archive_with_platform_ids(con, study_id, actor=other)


def test_withdrawal_and_deletion_take_them_and_a_restore_does_not_bring_them_back(store, tmp_path):
    """A participant's withdrawal and a researcher's deletion delete their demographics in the same transaction as
    their answers; a restore of a backup taken before keeps them deleted; the others' stay."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(store, path)
    with session(path) as con:
        study_id = study_actions.create(con, DESIGN.replace("name: asked", "name: leaving"), actor=LOCAL)
        people = [holder(con, path, study_id, f"leaving-00{n}") for n in (1, 2, 3)]
        for who in people:
            through_the_trials(con, study_id, who)
            study_actions.give_demographics(con, study_id, ANSWERS, actor=who)
        folder = backup.write(con, "before the deletions", target=tmp_path / "before")
        held = con.execute("SELECT count(*) FROM study_demographics").fetchone()[0]  # this study's and others'
        assert held >= 3 * len(ANSWERS) and backup.manifest(folder)["rows"]["study_demographics"] == held
        assert study_actions.withdraw(con, study_id, actor=people[0]).kind == "withdrawn"
        study_actions.delete_participant(con, study_id, people[1].id, "asked by e-mail", actor=LOCAL)
        for _ in range(2):
            assert [stored(con, study_id, who.id) for who in people] == [0, 0, len(ANSWERS)]
            assert list(studies.demographics(con, study_id)["participant_id"]) == [people[2].id]
            backup.restore(con, folder)


def test_the_participant_page_asks_on_one_form_then_shows_the_debrief(store, tmp_path, open_page):
    """The participate page after the last trial: one form with every question (optional ones marked); sent with a
    required one blank it names that question and keeps what was entered; sent complete, the done screen shows the
    debrief above the completion code."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(store, path)
    with session(path) as con:
        study_id = study_actions.create(con, DESIGN.replace("name: asked", "name: paged"), actor=LOCAL)
        token = token_for(con, path, study_id, "paged-001")
        through_the_trials(con, study_id, links.opened(con, path, token))
    at = open_page(path, "pages/participate.py", {"link": token})
    assert not at.exception and [t.value for t in at.title] == ["A few questions about you"]
    assert [r.label for r in at.radio] == ["What is your age?", "Which hand do you write with? (optional)"]
    assert at.text_input(key="demographic-native_languages").label.endswith("(optional)")
    at.text_input(key="demographic-native_languages").input("Welsh")
    at = next(b for b in at.button if b.label == "Continue").click().run()
    assert [e.value for e in at.error] == [widgets.message('Please answer "What is your age?"')]
    assert at.text_input(key="demographic-native_languages").value == "Welsh"
    at.radio(key="demographic-age_band").set_value("25-34")
    at.number_input(key="demographic-years_abroad").set_value(3)
    at = next(b for b in at.button if b.label == "Continue").click().run()
    assert not at.exception and not at.error and [t.value for t in at.title] == ["Thank you!"]
    shown = [m.value for m in at.markdown]
    debrief = widgets.plain(parse(DESIGN).debrief)
    assert debrief in shown and shown.index(debrief) < shown.index(
        "Your completion code (enter it where you found this study):"
    )
    with session(path) as con:
        given = store_studies.demographics(con, study_id).set_index("name")["value"]
        assert given.dropna().to_dict() == {"age_band": "25-34", "native_languages": "Welsh", "years_abroad": "3"}
        assert [c.value for c in at.code] == [store_studies.participant(con, study_id, "paged-001")["completion_code"]]


def finished_on_prolific(path, name: str, debrief: bool) -> tuple[str, str]:
    """A general-link participant of a study `name` (Prolific) who answered every trial and the questions: their
    token and their completion URL (None before the questions are answered, checked here)."""
    design = DESIGN.replace("name: asked", f"name: {name}").replace("debrief:", "platform: {name: prolific}\ndebrief:")
    with session(path) as con:
        study_id = study_actions.create(con, design if debrief else design.split("debrief:")[0], actor=LOCAL)
        general = links.opened(con, path, study_actions.general_link(con, path, study_id, 5, actor=LOCAL).token)
        token = study_actions.join_general(con, path, study_id, {"PROLIFIC_PID": f"P-{name}"}, actor=general)
        who = links.opened(con, path, token)
        assert through_the_trials(con, study_id, who).kind == "demographics"
        assert study_actions.completion(con, study_id, actor=who) is None
        study_actions.give_demographics(con, study_id, ANSWERS, actor=who)
        code = store_studies.participant(con, study_id, who.id)["completion_code"]
        onward = study_actions.completion(con, study_id, actor=who).url
    assert onward == f"https://app.prolific.com/submissions/complete?cc={code}"
    return token, onward


def test_a_platform_participant_is_sent_on_only_after_the_questions_and_the_debrief(store, tmp_path, open_page):
    """A general link's participant has no completion URL until the questions are answered; then the done screen
    shows the debrief and a *Continue* to the platform's completion URL, with no redirect before it is pressed; a
    finished participant's link reopened later does not redirect either, and offers the withdrawal."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(store, path)
    for name, debrief in (("sent", True), ("sped", False)):
        token, onward = finished_on_prolific(path, name, debrief)
        at = open_page(path, "pages/participate.py", {"link": token})
        anchors = [h.proto.body for h in at.get("html") if 'id="plab-continue"' in h.proto.body]  # in this tab
        assert not at.exception and len(anchors) == 1 and f'href="{html.escape(onward)}"' in anchors[0]
        assert "target=" not in anchors[0] and not at.get("link_button")  # a link button opened a new tab
        shown = widgets.plain(parse(DESIGN).debrief) in [m.value for m in at.markdown]
        followed = [h for h in at.get("html") if "plab-onward" in h.proto.body]  # the script that follows it
        # issue 63, item 3: reopened after finishing, the link waits (it offers the withdrawal) rather than sending
        # them straight on; straight after the last answer it sends them on at once (Chromium: test_study_browser)
        assert shown == debrief and not followed
        assert any(b.label == "Yes, withdraw and delete my answers" for b in at.button)
