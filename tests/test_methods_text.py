"""A judgement study's methods paragraph is text a researcher can paste into a paper (issue 62, item 6): no "nan",
singular and plural right, counts of people that add up (who started, withdrew, was deleted on request, did not
finish, was excluded by each declared rule, was analysed; pilots never counted), and the median response time over
the analysed participants' answers only. Each study is built on a new store (no ingest) through the participant's
door, as a browser would answer."""

from __future__ import annotations

import re

import pytest

from backend.actions import studies as study_actions
from backend.analysis import studies
from backend.identity import links
from backend.identity.actor import Actor
from backend.store.access import session
from backend.studies import collection
from tests.helpers.people import LOCAL
from tests.helpers.studies import holder, item_store

DESIGN = """\
name: {name}
dataset: two-items
item: item
condition: variant
assignment: latin
controls: {{where: {{variant: [control]}}, expected: 0, placement: mixed}}
attention:
  - {{text: "Move the slider to the right end.", expected: 1, tolerance: 0.1}}
order: {{seed: 3, separate: item}}
text: "{{input}}"
question: "How certain is the speaker that {{hypothesis}}?"
scale: {{kind: slider, min: 0, max: 1}}
practice: [{{text: "A practice sentence.", question: "A practice question?"}}]
{extra}"""
ATTENTION_RULE = "exclusions:\n  - {rule: attention, max_failed: 0}\n"
ONE_QUESTION = "demographics:\n  - {preset: age_band}\n"
FAST, SLOW = 1000.0, 9000.0  # the analysed participant's response times, and everyone else's


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A new store holding 2 items × 2 conditions and 1 control: each Latin-square list has 1 item per condition."""
    return item_store(tmp_path_factory.mktemp("methods") / "lab.duckdb", "two-items", 2, control=True)


def respond(con, study_id: str, who: Actor, rt_ms: float, attention: float = 1.0, trials: int | None = None):
    """`who` joins and answers `trials` trials (all when None): 0.5 on each, `attention` on the attention check, each
    answer timed at `rt_ms` by their browser; the screen after the last answer."""
    study_actions.join(con, study_id, actor=who)
    screen = study_actions.screen(con, study_id, actor=who)
    while screen.kind == "trial" and (trials is None or screen.position < trials):
        given = attention if screen.trial_kind == "attention" else 0.5
        measured = {"moved": True, "rt_ms": rt_ms, "left_count": 0, "left_ms": 0.0}
        screen = study_actions.answer(con, study_id, screen.position, given, measured, actor=who)
    return screen


@pytest.fixture(scope="module")
def crowd(store) -> str:
    """The methods paragraph of a closed study that 5 people started: one finished and is analysed (fast answers),
    one finished and failed the attention check, one withdrew, one finished and was deleted on request, one did not
    finish (all four slow); and two pilots, one of whom withdrew, who are never counted."""
    with session(store) as con:
        study_id = collection.create(con, DESIGN.format(name="crowd", extra=ATTENTION_RULE))
        people = {name: holder(con, store, study_id, f"crowd-{name}") for name in ("kept", "careless", "w", "d", "u")}
        assert respond(con, study_id, people["kept"], FAST).kind == "done"
        assert respond(con, study_id, people["careless"], SLOW, attention=0.0).kind == "done"
        respond(con, study_id, people["w"], SLOW, trials=2)
        study_actions.withdraw(con, study_id, actor=people["w"])
        assert respond(con, study_id, people["d"], SLOW).kind == "done"
        study_actions.delete_participant(con, study_id, people["d"].id, "asked by e-mail", actor=LOCAL)
        respond(con, study_id, people["u"], SLOW, trials=2)
        made = study_actions.pilot_links(con, store, study_id, 2, actor=LOCAL)
        pilots = [links.opened(con, store, link.token) for link in made]
        respond(con, study_id, pilots[0], SLOW)
        study_actions.withdraw(con, study_id, actor=pilots[1])
        study_actions.close(con, study_id, actor=LOCAL)
        return studies.methods(con, study_id)


@pytest.fixture(scope="module")
def alone(store) -> str:
    """The methods paragraph of a study with 1 item per condition, 1 control, 1 attention check, 1 practice item and
    1 demographic question, answered by 1 participant (too few for any interval)."""
    with session(store) as con:
        study_id = collection.create(con, DESIGN.format(name="alone", extra=ONE_QUESTION))
        who = holder(con, store, study_id, "alone-001")
        assert respond(con, study_id, who, FAST).kind == "demographics"
        assert study_actions.give_demographics(con, study_id, {"age_band": "25-34"}, actor=who).kind == "done"
        return studies.methods(con, study_id)


def test_people_who_withdrew_or_were_deleted_on_request_are_counted_and_the_counts_add_up(crowd):
    assert "5 participants started" in crowd, crowd
    assert "1 withdrew" in crowd and "1 had their data deleted on request" in crowd
    assert "1 did not finish" in crowd and "2 finished" in crowd
    assert "excluded 1 participant who failed more than 0 attention checks" in crowd
    assert "leaving 1 participant analysed" in crowd and "pilot" not in crowd


def test_one_item_per_condition_and_other_single_counts_are_singular(alone):
    said = alone
    assert "each condition on 1 item," in said and "1 control item (" in said, said
    assert "1 attention check," in said and "after 1 practice item," in said
    assert "answered 1 demographic question:" in said and "1 participant started" in said
    plural_after_one = re.findall(r"\b1 (?:\w+ )?(?:items|participants|checks|questions|answers|lists|trials)\b", said)
    assert plural_after_one == [] and "(s)" not in said


def test_a_condition_without_an_interval_prints_its_mean_and_why_never_nan(alone):
    assert "nan" not in alone.lower(), alone
    assert re.search(r"a: 0\.50 \(no interval: 1 participant, 1 item\)", alone), alone
    assert "an interval needs at least 3 participants and 3 items" in alone


def test_the_median_response_time_is_over_the_analysed_participants_answers_only(crowd):
    """The excluded, unfinished and pilot participants answered in 9 s each; the one analysed participant in 1 s."""
    assert "median 1.0 s over 5 answers of the 1 analysed participant;" in crowd, crowd
